//! The coverage model of one scratch zone: a coarse grid of cells over the zone, updated only where a
//! stroke passes (no read-back of canvas pixels), so each pointer move costs a few cells, not a frame.

/// Share of the zone to scratch before it clears by itself.
pub const REVEAL_THRESHOLD: f64 = 0.6;

#[derive(Debug, Clone, PartialEq)]
pub struct ScratchGrid {
    width: f64,
    height: f64,
    cols: usize,
    rows: usize,
    cleared: Vec<bool>,
    cleared_count: usize,
}

impl ScratchGrid {
    /// A grid over a `width` × `height` zone (CSS pixels) with cells of about `cell` pixels.
    pub fn new(width: f64, height: f64, cell: f64) -> ScratchGrid {
        let cols = ((width / cell).ceil() as usize).max(1);
        let rows = ((height / cell).ceil() as usize).max(1);
        ScratchGrid {
            width: width.max(1.0),
            height: height.max(1.0),
            cols,
            rows,
            cleared: vec![false; cols * rows],
            cleared_count: 0,
        }
    }

    pub fn coverage(&self) -> f64 {
        self.cleared_count as f64 / self.cleared.len() as f64
    }

    pub fn is_past_threshold(&self) -> bool {
        self.coverage() >= REVEAL_THRESHOLD
    }

    /// Scratches with a round brush of `radius` from `from` to `to` (zone coordinates, CSS pixels).
    pub fn stroke(&mut self, from: (f64, f64), to: (f64, f64), radius: f64) {
        let cell_w = self.width / self.cols as f64;
        let cell_h = self.height / self.rows as f64;
        let length = ((to.0 - from.0).powi(2) + (to.1 - from.1).powi(2)).sqrt();
        let steps = (length / (radius / 2.0).max(0.5)).ceil().max(1.0) as usize;
        for step in 0..=steps {
            let t = step as f64 / steps as f64;
            let (x, y) = (from.0 + (to.0 - from.0) * t, from.1 + (to.1 - from.1) * t);
            let col_range = cell_range(x - radius, x + radius, cell_w, self.cols);
            let row_range = cell_range(y - radius, y + radius, cell_h, self.rows);
            for row in row_range {
                for col in col_range.clone() {
                    let (cx, cy) = ((col as f64 + 0.5) * cell_w, (row as f64 + 0.5) * cell_h);
                    let inside = (cx - x).powi(2) + (cy - y).powi(2) <= radius * radius;
                    let cell = &mut self.cleared[row * self.cols + col];
                    if inside && !*cell {
                        *cell = true;
                        self.cleared_count += 1;
                    }
                }
            }
        }
    }
}

fn cell_range(lo: f64, hi: f64, cell: f64, count: usize) -> std::ops::Range<usize> {
    let start = (lo / cell).floor().max(0.0) as usize;
    let end = ((hi / cell).ceil().max(0.0) as usize).min(count);
    start.min(end)..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_covered_and_clears_where_the_brush_passes() {
        let mut g = ScratchGrid::new(200.0, 100.0, 10.0);
        assert_eq!(g.coverage(), 0.0);
        g.stroke((0.0, 50.0), (200.0, 50.0), 15.0);
        let band = g.coverage();
        assert!((0.2..0.4).contains(&band), "a 30 px band over 100 px: {band}");
        g.stroke((0.0, 50.0), (200.0, 50.0), 15.0);
        assert_eq!(g.coverage(), band, "scratching twice counts once");
        assert!(!g.is_past_threshold());
    }

    #[test]
    fn zig_zag_strokes_pass_the_threshold() {
        let mut g = ScratchGrid::new(120.0, 80.0, 8.0);
        for (i, y) in (0..=80).step_by(16).enumerate() {
            let (a, b) = if i % 2 == 0 { (0.0, 120.0) } else { (120.0, 0.0) };
            g.stroke((a, y as f64), (b, y as f64), 12.0);
        }
        assert!(g.is_past_threshold(), "{}", g.coverage());
    }

    #[test]
    fn strokes_outside_the_zone_clear_nothing() {
        let mut g = ScratchGrid::new(100.0, 100.0, 10.0);
        g.stroke((-50.0, -50.0), (-20.0, -30.0), 10.0);
        g.stroke((300.0, 300.0), (400.0, 300.0), 10.0);
        assert_eq!(g.coverage(), 0.0);
        g.stroke((0.0, 0.0), (0.0, 0.0), 10.0);
        assert!(g.coverage() > 0.0, "a tap at the corner clears the corner");
    }
}
