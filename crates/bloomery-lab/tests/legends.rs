//! Legends never cover data: in the SVG files the experiments write, no point or line of a
//! series lies under the legend box. Checked on the rendered files, as a reader sees them.

use bloomery_lab::plot::{color, LegendPlace, Plot, Series, Style};
use bloomery_lab::RunOptions;

/// The palette as SVG colours (`#RRGGBB`): what series are drawn in.
fn palette() -> Vec<String> {
    (0..8)
        .map(|i| {
            let c = color(i);
            format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
        })
        .collect()
}

fn attr<'a>(el: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = el.find(&key)? + key.len();
    Some(&el[at..at + el[at..].find('"')?])
}

fn num(el: &str, name: &str) -> f64 {
    attr(el, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The legend box and every data sample drawn before it (the legend comes last), in pixels.
fn legend_and_data(svg: &str) -> (Option<[f64; 4]>, Vec<(f64, f64)>) {
    let colours = palette();
    let mut data = Vec::new();
    for el in svg.split('<').map(|e| e.split('>').next().unwrap_or("")) {
        let coloured = |a: &str| attr(el, a).is_some_and(|c| colours.iter().any(|p| p == c));
        if el.starts_with("rect ")
            && attr(el, "opacity") == Some("0.85")
            && attr(el, "fill") == Some("#FFFFFF")
        {
            let (x, y) = (num(el, "x"), num(el, "y"));
            let b = [x, y, x + num(el, "width"), y + num(el, "height")];
            return (Some(b), data);
        }
        if el.starts_with("circle ") && (coloured("stroke") || coloured("fill")) {
            data.push((num(el, "cx"), num(el, "cy")));
        } else if el.starts_with("line ") && coloured("stroke") {
            let (a, b) = (
                (num(el, "x1"), num(el, "y1")),
                (num(el, "x2"), num(el, "y2")),
            );
            segment(a, b, &mut data);
        } else if el.starts_with("polyline ") && coloured("stroke") {
            let pts: Vec<(f64, f64)> = attr(el, "points")
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            data.extend(&pts);
            for w in pts.windows(2) {
                segment(w[0], w[1], &mut data);
            }
        }
    }
    (None, data)
}

/// Samples of a line segment every pixel.
fn segment(a: (f64, f64), b: (f64, f64), out: &mut Vec<(f64, f64)>) {
    let n = (b.0 - a.0).abs().max((b.1 - a.1).abs()).ceil().max(1.0) as usize;
    for i in 0..=n {
        let t = i as f64 / n as f64;
        out.push((a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t));
    }
}

fn covered(svg: &str) -> (bool, usize) {
    let (legend, data) = legend_and_data(svg);
    let Some([x0, y0, x1, y1]) = legend else {
        return (false, 0);
    };
    let n = data
        .iter()
        .filter(|&&(x, y)| x > x0 && x < x1 && y > y0 && y < y1)
        .count();
    (true, n)
}

#[test]
fn the_parser_sees_a_covered_legend() {
    // a plot whose data fill the whole area: drawn by hand with the legend inside, it would
    // cover data; the renderer moves it outside instead
    let mut p = Plot::new("dense", "x", "y");
    let mut pts = Vec::new();
    for i in 0..=40 {
        for j in 0..=40 {
            pts.push((f64::from(i), f64::from(j)));
        }
    }
    p.push(Series::new("grid", pts, Style::Points, 0));
    assert_eq!(p.legend_place().unwrap(), LegendPlace::Outside);
    let svg = p.to_svg().unwrap();
    assert!(svg.contains("width=\""), "svg");
    let (found, n) = covered(&svg);
    assert!(found, "no legend box found in the SVG");
    assert_eq!(n, 0);
    // and the check does see data under a legend box: a point and a line, then a box
    let c = &palette()[1];
    let hand = format!(
        "<svg><circle cx=\"50\" cy=\"50\" r=\"3\" stroke=\"{c}\"/>\
         <polyline fill=\"none\" stroke=\"{c}\" points=\"0,45 100,45 \"/>\
         <rect x=\"40\" y=\"40\" width=\"20\" height=\"20\" opacity=\"0.85\" \
         fill=\"#FFFFFF\" stroke=\"none\"/></svg>"
    );
    assert_eq!(covered(&hand), (true, 1 + 19));
}

#[test]
fn experiment_plots_keep_their_legends_off_the_data() {
    let out = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        out_dir: out.path().to_path_buf(),
        quick: true,
        seed: 1,
    };
    for name in ["mlbf-urls", "ibf-vs-cbf", "window-baselines"] {
        let e = bloomery_lab::find(name).unwrap();
        let report = (e.run)(&opts).unwrap();
        let svgs: Vec<_> = report
            .files
            .iter()
            .filter(|f| f.extension().is_some_and(|x| x == "svg"))
            .collect();
        assert!(!svgs.is_empty(), "{name}");
        for f in svgs {
            let svg = std::fs::read_to_string(f).unwrap();
            let (found, n) = covered(&svg);
            assert!(found, "{}: no legend", f.display());
            assert_eq!(n, 0, "{}: the legend covers {n} data samples", f.display());
        }
    }
}
