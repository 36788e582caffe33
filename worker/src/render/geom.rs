//! Plane geometry in output pixels: rectangles and the affine maps of layer transforms.

/// A rectangle with fractional edges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RectF {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) w: f64,
    pub(crate) h: f64,
}

impl RectF {
    pub(crate) fn new(x: f64, y: f64, w: f64, h: f64) -> RectF {
        RectF { x, y, w, h }
    }

    /// The whole-pixel rectangle covering this one.
    pub(crate) fn bounds(&self) -> IRect {
        IRect {
            x0: self.x.floor() as i64,
            y0: self.y.floor() as i64,
            x1: (self.x + self.w).ceil() as i64,
            y1: (self.y + self.h).ceil() as i64,
        }
    }
}

/// A whole-pixel rectangle [x0, x1) × [y0, y1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IRect {
    pub(crate) x0: i64,
    pub(crate) y0: i64,
    pub(crate) x1: i64,
    pub(crate) y1: i64,
}

impl IRect {
    pub(crate) fn of_size(w: u32, h: u32) -> IRect {
        IRect { x0: 0, y0: 0, x1: i64::from(w), y1: i64::from(h) }
    }

    pub(crate) fn intersect(&self, other: &IRect) -> IRect {
        IRect {
            x0: self.x0.max(other.x0),
            y0: self.y0.max(other.y0),
            x1: self.x1.min(other.x1),
            y1: self.y1.min(other.y1),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.x1 <= self.x0 || self.y1 <= self.y0
    }

    pub(crate) fn width(&self) -> i64 {
        (self.x1 - self.x0).max(0)
    }

    pub(crate) fn height(&self) -> i64 {
        (self.y1 - self.y0).max(0)
    }

    /// Grown by `by` pixels on every side.
    pub(crate) fn grow(&self, by: i64) -> IRect {
        IRect { x0: self.x0 - by, y0: self.y0 - by, x1: self.x1 + by, y1: self.y1 + by }
    }

    /// Grown so that its origin is even (chroma aligned).
    pub(crate) fn even_origin(&self) -> IRect {
        IRect { x0: self.x0 & !1, y0: self.y0 & !1, ..*self }
    }
}

/// `x' = a·x + b·y + c`, `y' = d·x + e·y + f`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Affine {
    pub(crate) a: f64,
    pub(crate) b: f64,
    pub(crate) c: f64,
    pub(crate) d: f64,
    pub(crate) e: f64,
    pub(crate) f: f64,
}

impl Affine {
    pub(crate) const IDENTITY: Affine = Affine { a: 1.0, b: 0.0, c: 0.0, d: 0.0, e: 1.0, f: 0.0 };

    pub(crate) fn translate(x: f64, y: f64) -> Affine {
        Affine { c: x, f: y, ..Affine::IDENTITY }
    }

    pub(crate) fn scale(sx: f64, sy: f64) -> Affine {
        Affine { a: sx, e: sy, ..Affine::IDENTITY }
    }

    /// Clockwise by `degrees` (y points down).
    pub(crate) fn rotate(degrees: f64) -> Affine {
        let (sin, cos) = degrees.to_radians().sin_cos();
        Affine { a: cos, b: -sin, c: 0.0, d: sin, e: cos, f: 0.0 }
    }

    /// `self` after `first`: maps p to self(first(p)).
    pub(crate) fn after(&self, first: &Affine) -> Affine {
        Affine {
            a: self.a * first.a + self.b * first.d,
            b: self.a * first.b + self.b * first.e,
            c: self.a * first.c + self.b * first.f + self.c,
            d: self.d * first.a + self.e * first.d,
            e: self.d * first.b + self.e * first.e,
            f: self.d * first.c + self.e * first.f + self.f,
        }
    }

    pub(crate) fn apply(&self, x: f64, y: f64) -> (f64, f64) {
        (self.a * x + self.b * y + self.c, self.d * x + self.e * y + self.f)
    }

    pub(crate) fn invert(&self) -> Option<Affine> {
        let det = self.a * self.e - self.b * self.d;
        if det.abs() < 1e-12 || !det.is_finite() {
            return None;
        }
        let (a, b, d, e) = (self.e / det, -self.b / det, -self.d / det, self.a / det);
        Some(Affine { a, b, c: -(a * self.c + b * self.f), d, e, f: -(d * self.c + e * self.f) })
    }

    /// Whether the map only scales and translates (no rotation or shear).
    pub(crate) fn is_axis_aligned(&self) -> bool {
        self.b.abs() < 1e-9 && self.d.abs() < 1e-9 && self.a > 0.0 && self.e > 0.0
    }

    /// The bounding box of the image of a `w` × `h` rectangle at the origin.
    pub(crate) fn bounds_of(&self, w: f64, h: f64) -> RectF {
        self.bounds_of_rect(RectF::new(0.0, 0.0, w, h))
    }

    /// The bounding box of the image of `r`.
    pub(crate) fn bounds_of_rect(&self, r: RectF) -> RectF {
        let (x1, y1) = (r.x + r.w, r.y + r.h);
        let corners = [self.apply(r.x, r.y), self.apply(x1, r.y), self.apply(r.x, y1), self.apply(x1, y1)];
        let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
        for (x, y) in corners {
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
        RectF::new(x0, y0, x1 - x0, y1 - y0)
    }
}

/// `x` rounded to the nearest even integer.
pub(crate) fn round_even(x: f64) -> i64 {
    ((x / 2.0).round() as i64) * 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_composes_and_inverts() {
        let m = Affine::translate(10.0, 5.0).after(&Affine::rotate(90.0)).after(&Affine::scale(2.0, 2.0));
        let (x, y) = m.apply(1.0, 0.0);
        assert!((x - 10.0).abs() < 1e-9 && (y - 7.0).abs() < 1e-9, "{x},{y}");
        let inv = m.invert().unwrap();
        let (u, v) = inv.apply(x, y);
        assert!((u - 1.0).abs() < 1e-9 && v.abs() < 1e-9);
        assert!(Affine::scale(2.0, 3.0).after(&Affine::translate(1.0, 1.0)).is_axis_aligned());
        assert!(!Affine::rotate(30.0).is_axis_aligned());
        assert_eq!(round_even(3.2), 4);
        assert_eq!(round_even(-3.0), -4);
    }
}
