//! A walk over a Lottie document before rlottie sees it. rlottie builds its whole render
//! tree while it parses, so what would make that tree huge or endless is refused here:
//! repeaters copying shapes too many times (nested ones multiply), precompositions deeper
//! than [`MAX_PRECOMP_DEPTH`], referring to themselves or expanding to more than
//! [`MAX_EXPANDED_LAYERS`] layers, and embedded images larger than [`MAX_IMAGE_PIXELS`]
//! (rlottie decodes them with no limit). Images must be embedded (`data:` addresses):
//! the walk marks each one embedded (`e: 1`) and drops its directory (`u`), since
//! rlottie otherwise opens `u` + `p` as a file path.

use std::collections::HashMap;
use std::io::Cursor;

use base64::Engine;
use serde_json::{Map, Value};

use super::refused;
use crate::media::MediaError;

/// Most copies one repeater makes.
pub(crate) const MAX_REPEATER_COPIES: f64 = 1000.0;
/// Most shapes repeaters may make of one shape, nested repeaters multiplied.
const MAX_REPEATED: f64 = 10_000.0;
/// Deepest nesting of precompositions.
pub(crate) const MAX_PRECOMP_DEPTH: usize = 16;
/// Most layers the precompositions expand to, each reference counted.
const MAX_EXPANDED_LAYERS: u64 = 10_000;
/// Largest embedded image, in pixels.
pub(crate) const MAX_IMAGE_PIXELS: u64 = 4096 * 4096;
/// Most pixels of all embedded images together.
const MAX_IMAGES_PIXELS: u64 = 64 << 20;

/// Checks `document` (an animation's JSON object) and marks its images embedded.
pub(super) fn check(document: &mut Map<String, Value>) -> Result<(), MediaError> {
    repeaters(&Value::Object(document.clone()), 1.0)?;
    precomps(document)?;
    images(document)
}

/// The repeaters in `value`, where the shapes around it are already copied `factor` times.
fn repeaters(value: &Value, factor: f64) -> Result<(), MediaError> {
    match value {
        Value::Array(items) => {
            // A repeater copies what comes before it in its group, and what it contains.
            let mut inner = factor;
            for item in items {
                if item.get("ty").and_then(Value::as_str) == Some("rp") {
                    let copies = item.get("c").map_or(1.0, copies);
                    if copies > MAX_REPEATER_COPIES {
                        return Err(refused(format!(
                            "a repeater makes {copies} copies; at most {MAX_REPEATER_COPIES} are drawn"
                        )));
                    }
                    inner *= copies.max(1.0);
                }
            }
            if inner > MAX_REPEATED {
                return Err(refused(format!(
                    "nested repeaters make {inner} copies of a shape; at most {MAX_REPEATED} are drawn"
                )));
            }
            items.iter().try_for_each(|item| repeaters(item, inner))
        }
        Value::Object(map) => map.values().try_for_each(|item| repeaters(item, factor)),
        _ => Ok(()),
    }
}

/// The most copies a repeater's `c` property asks for: its value (`k`: a number or a
/// one-number array), or the largest value of its keyframes (`s`, `e`).
fn copies(property: &Value) -> f64 {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::INFINITY),
        Value::Array(items) => items.iter().filter_map(Value::as_f64).fold(0.0, f64::max),
        _ => 0.0,
    };
    match property.get("k").unwrap_or(property) {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Object(keyframe) => {
                    ["s", "e"].iter().filter_map(|k| keyframe.get(*k)).map(number).fold(0.0, f64::max)
                }
                other => number(other),
            })
            .fold(0.0, f64::max),
        other => number(other),
    }
}

/// The precomposition references (`refId` of layers of type 0) of `layers`.
fn references(layers: Option<&Value>) -> Vec<&str> {
    layers
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|layer| layer.get("ty").and_then(Value::as_u64) == Some(0))
        .filter_map(|layer| layer.get("refId").and_then(Value::as_str))
        .collect()
}

/// Precompositions: no cycle, at most [`MAX_PRECOMP_DEPTH`] deep, at most
/// [`MAX_EXPANDED_LAYERS`] layers once expanded.
fn precomps(document: &Map<String, Value>) -> Result<(), MediaError> {
    let assets: HashMap<&str, Vec<&str>> = document
        .get("assets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|asset| Some((asset.get("id")?.as_str()?, references(asset.get("layers")))))
        .collect();
    /// The layers `id` expands to (`None` while it is being expanded: a cycle).
    fn expanded<'a>(
        id: &'a str,
        depth: usize,
        assets: &HashMap<&'a str, Vec<&'a str>>,
        done: &mut HashMap<&'a str, Option<u64>>,
    ) -> Result<u64, MediaError> {
        if depth > MAX_PRECOMP_DEPTH {
            return Err(refused(format!("precompositions nest deeper than {MAX_PRECOMP_DEPTH}")));
        }
        match done.get(id) {
            Some(Some(n)) => return Ok(*n),
            Some(None) => return Err(refused(format!("precomposition {id:?} contains itself"))),
            None => {}
        }
        done.insert(id, None);
        let mut total: u64 = 0;
        for child in assets.get(id).into_iter().flatten() {
            total = total.saturating_add(1 + expanded(child, depth + 1, assets, done)?);
            if total > MAX_EXPANDED_LAYERS {
                return Err(refused(format!("precompositions expand to more than {MAX_EXPANDED_LAYERS} layers")));
            }
        }
        done.insert(id, Some(total));
        Ok(total)
    }
    let mut done = HashMap::new();
    let mut total: u64 = 0;
    for id in references(document.get("layers")) {
        total = total.saturating_add(1 + expanded(id, 1, &assets, &mut done)?);
        if total > MAX_EXPANDED_LAYERS {
            return Err(refused(format!("precompositions expand to more than {MAX_EXPANDED_LAYERS} layers")));
        }
    }
    Ok(())
}

/// Image assets: embedded, of a known size within the limits; marked embedded.
fn images(document: &mut Map<String, Value>) -> Result<(), MediaError> {
    let Some(Value::Array(assets)) = document.get_mut("assets") else { return Ok(()) };
    let mut total: u64 = 0;
    for asset in assets.iter_mut().filter_map(Value::as_object_mut) {
        let Some(p) = asset.get("p") else { continue };
        let Some(address) = p.as_str().filter(|p| p.starts_with("data:")) else {
            return Err(refused(format!("image {p} is not embedded; embed images as data: addresses")));
        };
        let pixels = embedded_pixels(address)?;
        if pixels > MAX_IMAGE_PIXELS {
            return Err(refused(format!("an embedded image of {pixels} pixels; at most {MAX_IMAGE_PIXELS}")));
        }
        total += pixels;
        if total > MAX_IMAGES_PIXELS {
            return Err(refused(format!("embedded images of more than {MAX_IMAGES_PIXELS} pixels together")));
        }
        asset.insert("e".into(), Value::from(1));
        asset.remove("u");
    }
    Ok(())
}

/// The pixels of the image in a `data:…;base64,` address, read from its header.
fn embedded_pixels(address: &str) -> Result<u64, MediaError> {
    let unreadable = || refused("an embedded image is not a readable base64 PNG, JPEG, GIF or WebP".into());
    let (_, data) = address.split_once(";base64,").ok_or_else(unreadable)?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|_| unreadable())?;
    let reader = image::ImageReader::new(Cursor::new(bytes)).with_guessed_format().map_err(|_| unreadable())?;
    let (width, height) = reader.into_dimensions().map_err(|_| unreadable())?;
    Ok(u64::from(width) * u64::from(height))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn checked(document: Value) -> Result<Value, String> {
        let Value::Object(mut map) = document else { unreachable!() };
        check(&mut map).map(|()| Value::Object(map)).map_err(|e| e.to_string())
    }

    fn animation(layers: Value, assets: Value) -> Value {
        json!({"v": "5.7", "w": 100, "h": 100, "fr": 30, "ip": 0, "op": 30, "layers": layers, "assets": assets})
    }

    fn shape_layer(shapes: Value) -> Value {
        json!({"ty": 4, "ip": 0, "op": 30, "shapes": shapes})
    }

    #[test]
    fn a_repeater_of_two_hundred_million_copies_is_refused() {
        let bomb = animation(
            json!([shape_layer(json!([{"ty": "rc"}, {"ty": "rp", "c": {"a": 0, "k": 200000000}}]))]),
            json!([]),
        );
        assert!(checked(bomb).unwrap_err().contains("a repeater makes 200000000 copies"));
        let animated = json!({"a": 1, "k": [{"t": 0, "s": [5]}, {"t": 10, "s": [5000]}]});
        let keyframed = animation(json!([shape_layer(json!([{"ty": "rp", "c": animated}]))]), json!([]));
        assert!(checked(keyframed).unwrap_err().contains("5000 copies"));
        let fine =
            animation(json!([shape_layer(json!([{"ty": "rc"}, {"ty": "rp", "c": {"a": 0, "k": 12}}]))]), json!([]));
        assert!(checked(fine).is_ok());
    }

    #[test]
    fn nested_repeaters_multiply() {
        let inner = json!({"ty": "gr", "it": [{"ty": "rc"}, {"ty": "rp", "c": {"a": 0, "k": 500}}]});
        let nested = animation(json!([shape_layer(json!([inner, {"ty": "rp", "c": {"a": 0, "k": 500}}]))]), json!([]));
        assert!(checked(nested).unwrap_err().contains("nested repeaters make 250000 copies"));
    }

    #[test]
    fn a_precomposition_that_contains_itself_or_nests_too_deep_is_refused() {
        let refer = |id: &str| json!({"ty": 0, "refId": id, "ip": 0, "op": 30});
        let cycle = animation(json!([refer("a")]), json!([{"id": "a", "layers": [refer("a")]}]));
        assert!(checked(cycle).unwrap_err().contains("precomposition \"a\" contains itself"));
        let chain: Vec<Value> =
            (0..20).map(|i| json!({"id": format!("p{i}"), "layers": [refer(&format!("p{}", i + 1))]})).collect();
        let deep = animation(json!([refer("p0")]), Value::Array(chain));
        assert!(checked(deep).unwrap_err().contains("nest deeper than 16"));
        // Ten levels of ten references each: 10^10 layers from a few hundred bytes.
        let fan: Vec<Value> = (0..10)
            .map(|i| json!({"id": format!("f{i}"), "layers": vec![refer(&format!("f{}", i + 1)); 10]}))
            .collect();
        let wide = animation(json!([refer("f0")]), Value::Array(fan));
        assert!(checked(wide).unwrap_err().contains("more than 10000 layers"));
        let shared =
            animation(json!([refer("a"), refer("a")]), json!([{"id": "a", "layers": [shape_layer(json!([]))]}]));
        assert!(checked(shared).is_ok());
    }

    #[test]
    fn images_must_be_embedded_small_and_are_marked_embedded() {
        let linked = animation(json!([]), json!([{"id": "i", "w": 1, "h": 1, "u": "/etc/", "p": "passwd"}]));
        assert!(checked(linked).unwrap_err().contains("is not embedded"));
        let png = |w: u32, h: u32| {
            let mut bytes = Vec::new();
            image::DynamicImage::new_luma8(w, h)
                .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
                .unwrap();
            format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
        };
        let huge = animation(json!([]), json!([{"id": "i", "w": 1, "h": 1, "p": png(5000, 4000)}]));
        assert!(checked(huge).unwrap_err().contains("an embedded image of 20000000 pixels"));
        let small = animation(json!([]), json!([{"id": "i", "w": 2, "h": 2, "u": "/etc/", "p": png(2, 2)}]));
        let marked = checked(small).unwrap();
        assert_eq!(marked["assets"][0]["e"], 1);
        assert!(marked["assets"][0].get("u").is_none());
        let garbage = animation(json!([]), json!([{"id": "i", "p": "data:image/png;base64,AAAA"}]));
        assert!(checked(garbage).unwrap_err().contains("not a readable base64"));
    }
}
