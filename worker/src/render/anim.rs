//! Animation curves: a layer's opacity, offset, scale and Ken Burns window at a moment of
//! its life.
//!
//! * `fade_in` / `fade_out` multiply the opacity (0 → 1 from the layer's start, 1 → 0
//!   until its end).
//! * `slide_in` / `slide_out` move the layer by up to its own box size; while a slide
//!   runs the layer is clipped to its box, so it is revealed by (or hidden behind) the
//!   box's edge instead of popping up beside it.
//! * `scale` multiplies the size about the box centre over the whole life;
//!   `ken_burns` moves the visible window of the fitted source over the whole life.
//!
//! Several animations of a kind combine (opacities and scales multiply, offsets add; the
//! last `ken_burns` wins). Progress `p` in [0, 1] is eased quadratically.

use reelfarm_domain::template::{Animation, Direction, Easing, Rect};

/// A layer's appearance at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Motion {
    /// Multiplies the layer's own opacity.
    pub(crate) opacity: f64,
    /// Offset in output pixels.
    pub(crate) dx: f64,
    pub(crate) dy: f64,
    /// Size factor about the box centre.
    pub(crate) scale: f64,
    /// The visible window of the source (fractions), for Ken Burns.
    pub(crate) window: Option<Rect>,
    /// A slide is under way: clip to the box.
    pub(crate) sliding: bool,
}

pub(crate) fn ease(easing: Easing, p: f64) -> f64 {
    let p = p.clamp(0.0, 1.0);
    match easing {
        Easing::Linear => p,
        Easing::EaseIn => p * p,
        Easing::EaseOut => 1.0 - (1.0 - p) * (1.0 - p),
        Easing::EaseInOut if p < 0.5 => 2.0 * p * p,
        Easing::EaseInOut => 1.0 - 2.0 * (1.0 - p) * (1.0 - p),
    }
}

/// The offset of a layer of `w` × `h` pixels displaced by `amount` (0..1) of its size
/// in the direction opposite to `direction` (where a slide moving `direction` comes from).
fn behind(direction: Direction, amount: f64, w: f64, h: f64) -> (f64, f64) {
    match direction {
        Direction::Left => (amount * w, 0.0),
        Direction::Right => (-amount * w, 0.0),
        Direction::Up => (0.0, amount * h),
        Direction::Down => (0.0, -amount * h),
    }
}

/// The motion at `tau` seconds into a layer lasting `life` seconds whose box is `w` × `h`
/// output pixels.
pub(crate) fn motion(animations: &[Animation], tau: f64, life: f64, w: f64, h: f64) -> Motion {
    let mut m = Motion { opacity: 1.0, dx: 0.0, dy: 0.0, scale: 1.0, window: None, sliding: false };
    let whole = if life > 0.0 { tau / life } else { 1.0 };
    for animation in animations {
        match *animation {
            Animation::FadeIn { duration, easing } => m.opacity *= ease(easing, progress(tau, duration)),
            Animation::FadeOut { duration, easing } => {
                m.opacity *= 1.0 - ease(easing, progress(tau - (life - duration), duration));
            }
            Animation::SlideIn { duration, direction, easing } => {
                let p = progress(tau, duration);
                if p < 1.0 {
                    let (dx, dy) = behind(direction, 1.0 - ease(easing, p), w, h);
                    m.dx += dx;
                    m.dy += dy;
                    m.sliding = true;
                }
            }
            Animation::SlideOut { duration, direction, easing } => {
                let p = progress(tau - (life - duration), duration);
                if p > 0.0 {
                    // Leaving moving `direction` = arriving from the opposite side, reversed.
                    let (dx, dy) = behind(direction, ease(easing, p), w, h);
                    m.dx -= dx;
                    m.dy -= dy;
                    m.sliding = true;
                }
            }
            Animation::Scale { from, to, easing } => m.scale *= from + (to - from) * ease(easing, whole),
            Animation::KenBurns { from, to, easing } => {
                let p = ease(easing, whole);
                let lerp = |a: f64, b: f64| a + (b - a) * p;
                m.window = Some(Rect {
                    x: lerp(from.x, to.x),
                    y: lerp(from.y, to.y),
                    width: lerp(from.width, to.width),
                    height: lerp(from.height, to.height),
                });
            }
        }
    }
    m.opacity = m.opacity.clamp(0.0, 1.0);
    m
}

/// Progress of an animation of `duration` seconds, `elapsed` seconds after it began.
fn progress(elapsed: f64, duration: f64) -> f64 {
    if duration <= 0.0 {
        return 1.0;
    }
    (elapsed / duration).clamp(0.0, 1.0)
}

/// Whether the layer changes size over its life.
pub(crate) fn scales(animations: &[Animation]) -> bool {
    animations.iter().any(|a| matches!(a, Animation::Scale { from, to, .. } if from != to || *from != 1.0))
}

/// The Ken Burns windows (from, to), when the layer has one.
pub(crate) fn ken_burns(animations: &[Animation]) -> Option<(Rect, Rect)> {
    animations.iter().rev().find_map(|a| match a {
        Animation::KenBurns { from, to, .. } => Some((*from, *to)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fades_and_slides_follow_the_layer_life() {
        let anims = [
            Animation::FadeIn { duration: 1.0, easing: Easing::Linear },
            Animation::SlideOut { duration: 1.0, direction: Direction::Left, easing: Easing::Linear },
        ];
        let m = motion(&anims, 0.5, 4.0, 100.0, 50.0);
        assert_eq!((m.opacity, m.dx, m.sliding), (0.5, 0.0, false));
        let m = motion(&anims, 3.5, 4.0, 100.0, 50.0);
        assert_eq!((m.opacity, m.dx, m.sliding), (1.0, -50.0, true));
        let slide_in = [Animation::SlideIn { duration: 2.0, direction: Direction::Down, easing: Easing::Linear }];
        let m = motion(&slide_in, 0.0, 4.0, 100.0, 50.0);
        assert_eq!((m.dx, m.dy), (0.0, -50.0));
    }

    #[test]
    fn easing_curves_start_at_zero_and_end_at_one() {
        for e in [Easing::Linear, Easing::EaseIn, Easing::EaseOut, Easing::EaseInOut] {
            assert_eq!((ease(e, 0.0), ease(e, 1.0)), (0.0, 1.0));
        }
        assert!(ease(Easing::EaseIn, 0.5) < 0.5 && ease(Easing::EaseOut, 0.5) > 0.5);
        assert_eq!(ease(Easing::EaseInOut, 0.5), 0.5);
    }
}
