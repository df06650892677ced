//! A small markdown table writer with aligned columns, and number formats shared by the
//! experiments.

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text: left aligned.
    Left,
    /// Numbers: right aligned.
    Right,
}

/// A markdown table built row by row.
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers; the first column is left aligned, the rest right
    /// aligned (the usual "label, then numbers" layout).
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Self {
        let headers: Vec<String> = headers.into_iter().map(Into::into).collect();
        let align = (0..headers.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Self {
            headers,
            align,
            rows: Vec::new(),
        }
    }

    /// Override the alignment of every column.
    pub fn with_align(mut self, align: &[Align]) -> Self {
        for (a, b) in self.align.iter_mut().zip(align) {
            *a = *b;
        }
        self
    }

    /// Append a row. Missing cells are left empty; extra cells are an error.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        let mut cells: Vec<String> = cells.into_iter().map(Into::into).collect();
        assert!(
            cells.len() <= self.headers.len(),
            "row has {} cells, table has {} columns",
            cells.len(),
            self.headers.len()
        );
        cells.resize(self.headers.len(), String::new());
        self.rows.push(cells);
        self
    }

    /// Number of data rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as GitHub-flavoured markdown, columns padded to equal width.
    pub fn to_markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let headers: Vec<String> = self.headers.iter().map(|h| esc(h)).collect();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(|c| esc(c)).collect())
            .collect();
        let width: Vec<usize> = (0..headers.len())
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([headers[i].chars().count(), 3])
                    .max()
                    .unwrap_or(3)
            })
            .collect();
        let pad = |s: &str, i: usize| {
            let fill = width[i] - s.chars().count();
            match self.align[i] {
                Align::Left => format!("{s}{}", " ".repeat(fill)),
                Align::Right => format!("{}{s}", " ".repeat(fill)),
            }
        };
        let line = |cells: &[String]| {
            let inner: Vec<String> = cells.iter().enumerate().map(|(i, c)| pad(c, i)).collect();
            format!("| {} |\n", inner.join(" | "))
        };
        let mut out = line(&headers);
        let rule: Vec<String> = (0..headers.len())
            .map(|i| match self.align[i] {
                Align::Left => format!(":{}", "-".repeat(width[i] - 1)),
                Align::Right => format!("{}:", "-".repeat(width[i] - 1)),
            })
            .collect();
        out.push_str(&format!("| {} |\n", rule.join(" | ")));
        for r in &rows {
            out.push_str(&line(r));
        }
        out
    }
}

/// A rate in compact scientific notation with three significant digits (`1.23e-4`), `0` for 0.
pub fn rate(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if !x.is_finite() {
        format!("{x}")
    } else {
        format!("{x:.2e}")
    }
}

/// A plain number with `digits` decimals.
pub fn num(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

/// An integer with thin grouping: `10_000_000` → `10,000,000`.
pub fn int(x: u64) -> String {
    let s = x.to_string();
    let head = match s.len() % 3 {
        0 => 3,
        r => r,
    };
    let mut out = s[..head].to_string();
    for group in s.as_bytes()[head..].chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(group).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_markdown() {
        let mut t = Table::new(["name", "value"]);
        t.row(["a", "1"]).row(["long|name", "22"]);
        let md = t.to_markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "| name       | value |");
        assert_eq!(lines[1], "| :--------- | ----: |");
        assert_eq!(lines[3], "| long\\|name |    22 |");
        assert!(lines
            .iter()
            .all(|l| l.chars().count() == lines[0].chars().count()));
    }

    #[test]
    fn formats() {
        assert_eq!(rate(0.0), "0");
        assert_eq!(rate(0.000123456), "1.23e-4");
        assert_eq!(int(10_000_000), "10,000,000");
        assert_eq!(int(999), "999");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(0), "0");
        assert_eq!(int(123_456), "123,456");
        assert_eq!(num(1.23456, 2), "1.23");
    }
}
