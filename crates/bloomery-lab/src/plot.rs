//! Line and scatter plots written as SVG with `plotters`' SVG backend.
//!
//! Only the SVG backend is compiled: text goes into the file as `<text>` elements and is laid
//! out with plotters' built-in size estimate, so no system font library is needed to render.
//! Logarithmic axes are drawn by plotting `log10` of the values on a linear axis and labelling
//! the ticks with the original values (points ≤ 0 are left out of a log axis).
//!
//! The legend never covers data: it goes into the first corner of the plotting area that no
//! point or line passes through ([`Plot::legend_place`]), and when every corner holds data,
//! to the right of the plotting area (the canvas grows by the legend's width).

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A solid line.
    Line,
    /// A dashed line.
    Dashed,
    /// Markers only (measurements).
    Points,
    /// A solid line with markers.
    LinePoints,
}

/// One series of a plot.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text (empty: not in the legend).
    pub label: String,
    /// The (x, y) points, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// How to draw it.
    pub style: Style,
    /// Index into the palette (series that belong together share a colour).
    pub color: usize,
}

impl Series {
    /// A series.
    pub fn new(
        label: impl Into<String>,
        points: Vec<(f64, f64)>,
        style: Style,
        color: usize,
    ) -> Self {
        Self {
            label: label.into(),
            points,
            style,
            color,
        }
    }
}

/// A 2-D plot.
#[derive(Debug, Clone)]
pub struct Plot {
    /// Title over the plot.
    pub title: String,
    /// X axis caption.
    pub x_label: String,
    /// Y axis caption.
    pub y_label: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// The series.
    pub series: Vec<Series>,
    /// Size in pixels.
    pub size: (u32, u32),
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

/// Where a plot's legend is drawn (see [`Plot::legend_place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegendPlace {
    /// Inside the plotting area, upper right.
    UpperRight,
    /// Inside, upper left.
    UpperLeft,
    /// Inside, lower right.
    LowerRight,
    /// Inside, lower left.
    LowerLeft,
    /// Outside the plotting area, to its right.
    Outside,
}

impl LegendPlace {
    const INSIDE: [LegendPlace; 4] = [
        LegendPlace::UpperRight,
        LegendPlace::UpperLeft,
        LegendPlace::LowerRight,
        LegendPlace::LowerLeft,
    ];
}

/// Font of the legend's labels.
const LEGEND_FONT: (&str, u32) = ("sans-serif", 13);
/// Pixels the legend keeps from the edges of the plotting area (plotters' own layout).
const LEGEND_INSET: i32 = 5;
/// Room a point or line needs around it to stay visible next to the legend box.
const LEGEND_CLEARANCE: i32 = 3;

/// The plotting area in backend pixels, every drawn point and line sampled in backend
/// pixels, and the legend box's size: what choosing a legend place needs.
struct Layout {
    origin: (i32, i32),
    area: (i32, i32),
    samples: Vec<(i32, i32)>,
    legend: (i32, i32),
}

impl Layout {
    /// The legend box at `place` (backend pixels; `Outside` is right of the plotting area).
    fn legend_box(&self, place: LegendPlace) -> ((i32, i32), (i32, i32)) {
        let ((ox, oy), (aw, ah), (w, h)) = (self.origin, self.area, self.legend);
        let (x, y) = match place {
            LegendPlace::UpperRight => (ox + aw - w - LEGEND_INSET, oy + LEGEND_INSET),
            LegendPlace::UpperLeft => (ox + LEGEND_INSET, oy + LEGEND_INSET),
            LegendPlace::LowerRight => (ox + aw - w - LEGEND_INSET, oy + ah - h - LEGEND_INSET),
            LegendPlace::LowerLeft => (ox + LEGEND_INSET, oy + ah - h - LEGEND_INSET),
            LegendPlace::Outside => (ox + aw + 3 * LEGEND_INSET, oy + LEGEND_INSET),
        };
        ((x, y), (x + w, y + h))
    }

    /// Samples of data under the legend box at `place`.
    fn covered(&self, place: LegendPlace) -> usize {
        let ((x0, y0), (x1, y1)) = self.legend_box(place);
        let c = LEGEND_CLEARANCE;
        self.samples
            .iter()
            .filter(|&&(x, y)| x >= x0 - c && x <= x1 + c && y >= y0 - c && y <= y1 + c)
            .count()
    }

    /// The first inside corner with no data under the legend, else outside.
    fn place(&self) -> LegendPlace {
        LegendPlace::INSIDE
            .into_iter()
            .find(|&p| self.covered(p) == 0)
            .unwrap_or(LegendPlace::Outside)
    }
}

/// The palette colour for an index (wraps around).
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

impl Plot {
    /// An empty plot with linear axes, 960×640.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            log_x: false,
            log_y: false,
            series: Vec::new(),
            size: (960, 640),
        }
    }

    /// Use a logarithmic x axis.
    pub fn log_x(mut self) -> Self {
        self.log_x = true;
        self
    }

    /// Use a logarithmic y axis.
    pub fn log_y(mut self) -> Self {
        self.log_y = true;
        self
    }

    /// Add a series.
    pub fn push(&mut self, s: Series) -> &mut Self {
        self.series.push(s);
        self
    }

    /// The points of a series as drawn: log axes transformed, unplottable points dropped.
    fn transformed(&self, s: &Series) -> Vec<(f64, f64)> {
        let t = |v: f64, log: bool| if log { v.log10() } else { v };
        s.points
            .iter()
            .filter(|(x, y)| (!self.log_x || *x > 0.0) && (!self.log_y || *y > 0.0))
            .map(|&(x, y)| (t(x, self.log_x), t(y, self.log_y)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect()
    }

    /// Axis ranges covering every point, padded; log axes snap to whole decades.
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| self.transformed(s))
            .collect();
        let span = |vals: Vec<f64>, log: bool| {
            let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !lo.is_finite() {
                return (0.0, 1.0);
            }
            if log {
                let (a, b) = (lo.floor(), hi.ceil());
                if a == b {
                    (a - 1.0, b + 1.0)
                } else {
                    (a, b)
                }
            } else {
                let pad = ((hi - lo) * 0.04).max(1e-9);
                (lo - pad, hi + pad)
            }
        };
        (
            span(pts.iter().map(|p| p.0).collect(), self.log_x),
            span(pts.iter().map(|p| p.1).collect(), self.log_y),
        )
    }

    /// Where the legend goes: the first of the upper-right, upper-left, lower-right and
    /// lower-left corners of the plotting area where no point or line lies under it, else
    /// outside the plotting area, to its right.
    pub fn legend_place(&self) -> anyhow::Result<LegendPlace> {
        Ok(self.layout()?.place())
    }

    /// Points and line samples (in pixels) under the legend where it is drawn: 0 by
    /// construction; for tests.
    pub fn legend_covers(&self) -> anyhow::Result<usize> {
        let l = self.layout()?;
        Ok(l.covered(l.place()))
    }

    /// Lay the chart out on a scratch canvas: the plotting area, the data in pixels, and the
    /// size of the legend.
    fn layout(&self) -> anyhow::Result<Layout> {
        let mut scratch = String::new();
        let root = SVGBackend::with_string(&mut scratch, self.size).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot {:?}: {e}", self.title);
        let chart = self.chart(&root).map_err(|e| err(&e))?;
        let area = chart.plotting_area();
        let (aw, ah) = area.dim_in_pixel();
        let mut samples = Vec::new();
        for s in &self.series {
            let px: Vec<(i32, i32)> = self
                .transformed(s)
                .iter()
                .map(|p| chart.backend_coord(p))
                .collect();
            samples.extend(&px);
            if s.style != Style::Points {
                // every ~2 pixels along each segment
                for w in px.windows(2) {
                    let ((x0, y0), (x1, y1)) = (w[0], w[1]);
                    let steps = ((x1 - x0).abs().max((y1 - y0).abs()) / 2).max(1);
                    for i in 1..steps {
                        samples.push((x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps));
                    }
                }
            }
        }
        let font: TextStyle = LEGEND_FONT.into_font().into();
        let mut text = MultiLineText::<_, &str>::new((0, 0), &font);
        let mut entries = 0;
        for s in self.series.iter().filter(|s| !s.label.is_empty()) {
            text.push_line(s.label.as_str());
            entries += 1;
        }
        let legend = if entries == 0 {
            (0, 0)
        } else {
            let (w, h) = text.estimate_dimension().map_err(|e| err(&e))?;
            // plotters adds the sample's width (30) and a margin of 10 on each side
            (w + 30 + 20, h + 20)
        };
        Ok(Layout {
            origin: area.get_base_pixel(),
            area: (aw as i32, ah as i32),
            samples,
            legend,
        })
    }

    /// Render to an SVG document.
    pub fn to_svg(&self) -> anyhow::Result<String> {
        let layout = self.layout()?;
        let place = layout.place();
        let size = if place == LegendPlace::Outside {
            (
                self.size.0 + (layout.legend.0 + 4 * LEGEND_INSET) as u32,
                self.size.1,
            )
        } else {
            self.size
        };
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
            root.fill(&WHITE)
                .map_err(|e| anyhow::anyhow!("plot {:?}: {e}", self.title))?;
            // the chart keeps its own size; an outside legend takes the added width
            let (chart_area, _) = root.split_horizontally(self.size.0);
            self.draw(&chart_area, &layout, place)
                .map_err(|e| anyhow::anyhow!("plot {:?}: {e}", self.title))?;
            root.present()
                .map_err(|e| anyhow::anyhow!("plot {:?}: {e}", self.title))?;
        }
        Ok(out)
    }

    /// Render and write to `path`.
    pub fn write_svg(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, self.to_svg()?)?;
        Ok(())
    }

    /// The chart with its mesh drawn, ready for the series.
    #[allow(clippy::type_complexity)]
    fn chart<'a, 'b>(
        &self,
        root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    ) -> Result<
        ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        DrawingAreaErrorKind<<SVGBackend<'b> as DrawingBackend>::ErrorType>,
    > {
        let ((x0, x1), (y0, y1)) = self.ranges();
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        let (log_x, log_y) = (self.log_x, self.log_y);
        let fx = move |v: &f64| tick(*v, log_x);
        let fy = move |v: &f64| tick(*v, log_y);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_label_formatter(&fx)
            .y_label_formatter(&fy)
            .label_style(("sans-serif", 14))
            .light_line_style(RGBColor(235, 235, 235));
        if log_x {
            mesh.x_labels(((x1 - x0) as usize + 1).max(2));
        }
        if log_y {
            mesh.y_labels(((y1 - y0) as usize + 1).max(2));
        }
        mesh.draw()?;
        Ok(chart)
    }

    fn draw(
        &self,
        root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        layout: &Layout,
        place: LegendPlace,
    ) -> Result<(), DrawingAreaErrorKind<<SVGBackend<'_> as DrawingBackend>::ErrorType>> {
        let mut chart = self.chart(root)?;
        for s in &self.series {
            let pts = self.transformed(s);
            let c = color(s.color);
            let line = c.stroke_width(2);
            let legend_style = line;
            let anno = match s.style {
                Style::Line => chart.draw_series(LineSeries::new(pts.clone(), line))?,
                Style::Dashed => {
                    chart.draw_series(DashedLineSeries::new(pts.clone(), 8, 5, line))?
                }
                Style::Points => {
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.stroke_width(1))))?
                }
                Style::LinePoints => {
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
                    chart.draw_series(LineSeries::new(pts.clone(), line))?
                }
            };
            if s.label.is_empty() {
                continue;
            }
            let style = s.style;
            anno.label(s.label.as_str())
                .legend(move |(x, y)| match style {
                    Style::Points => Circle::new((x + 10, y), 3, c.stroke_width(1)).into_dyn(),
                    Style::Dashed => {
                        DashedPathElement::new(vec![(x, y), (x + 20, y)], 6, 4, legend_style)
                            .into_dyn()
                    }
                    _ => PathElement::new(vec![(x, y), (x + 20, y)], legend_style).into_dyn(),
                });
        }
        // the box's corner relative to the plotting area, where plotters places labels
        let ((bx, by), _) = layout.legend_box(place);
        let (ox, oy) = layout.origin;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::Coordinate(bx - ox, by - oy))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(LEGEND_FONT)
            .draw()?;
        Ok(())
    }
}

/// A tick label: the value itself, or `10^v` on a log axis (whole decades only).
fn tick(v: f64, log: bool) -> String {
    if !log {
        let r = (v * 1000.0).round() / 1000.0;
        return format!("{r}");
    }
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    let e = v.round() as i32;
    if (-3..=0).contains(&e) {
        format!("{}", 10f64.powi(e))
    } else if (1..=6).contains(&e) {
        format!("{}", 10u64.pow(e as u32))
    } else {
        format!("1e{e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_log_plot_with_text() {
        let mut p = Plot::new("rates", "m/n", "rate").log_y();
        p.push(Series::new(
            "a",
            vec![(1.0, 0.5), (2.0, 0.01), (3.0, 0.0)],
            Style::Line,
            0,
        ));
        p.push(Series::new(
            "b",
            vec![(1.0, 0.4), (2.0, 0.02)],
            Style::Points,
            1,
        ));
        p.push(Series::new(
            "c",
            vec![(1.0, 0.3), (2.0, 0.03)],
            Style::Dashed,
            2,
        ));
        let svg = p.to_svg().unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("<text"), "labels are text elements");
        assert!(svg.contains("\nrates\n"), "title");
        assert!(svg.contains("\n0.01\n"), "decade tick labels");
        assert!(svg.contains("<circle"));
    }

    fn line(label: &str, pts: Vec<(f64, f64)>) -> Series {
        Series::new(label, pts, Style::Line, 0)
    }

    #[test]
    fn legend_goes_to_a_free_corner_or_outside() {
        // data along the bottom: the upper right is free
        let mut p = Plot::new("low", "x", "y");
        p.push(line("low", vec![(0.0, 0.0), (10.0, 0.5), (20.0, 0.0)]));
        p.push(line("", vec![(0.0, 10.0)])); // sets the y range, no legend entry
        assert_eq!(p.legend_place().unwrap(), LegendPlace::UpperRight);
        // a line through the upper right corner: the upper left is free
        let mut p = Plot::new("rising", "x", "y");
        p.push(line("rising", vec![(0.0, 0.0), (10.0, 10.0)]));
        assert_eq!(p.legend_place().unwrap(), LegendPlace::UpperLeft);
        // data in every corner: outside, and the canvas grows
        let mut p = Plot::new("corners", "x", "y");
        p.push(line("rising", vec![(0.0, 0.0), (10.0, 10.0)]));
        p.push(line("falling", vec![(0.0, 10.0), (10.0, 0.0)]));
        assert_eq!(p.legend_place().unwrap(), LegendPlace::Outside);
        assert_eq!(p.legend_covers().unwrap(), 0);
        let svg = p.to_svg().unwrap();
        let width: u32 = svg
            .split("width=\"")
            .nth(1)
            .and_then(|w| w.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        assert!(width > p.size.0, "{width}");
    }

    #[test]
    fn ticks() {
        assert_eq!(tick(-2.0, true), "0.01");
        assert_eq!(tick(-6.0, true), "1e-6");
        assert_eq!(tick(-2.5, true), "");
        assert_eq!(tick(2.0, true), "100");
        assert_eq!(tick(0.25, false), "0.25");
    }
}
