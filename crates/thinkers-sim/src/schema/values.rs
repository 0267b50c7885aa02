//! Leaf values: strings (lengths, formats, patterns), integers and numbers (bounds, multipleOf).
//!
//! "Good" values are descriptive strings, upper-half numbers; weak ones are terse strings and
//! lower-half numbers. Both are valid for the schema.

use rand::Rng;
use serde_json::{Map, Number, Value};

use super::Generator;
use super::pattern;

/// The longest hint woven into a free-text string.
const HINT_CHARS: usize = 240;

impl Generator<'_> {
    pub(super) fn gen_string(&mut self, map: &Map<String, Value>) -> Value {
        let min_len = map
            .get("minLength")
            .and_then(Value::as_u64)
            .map_or(0, |n| n as usize);
        let max_len = map
            .get("maxLength")
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        if let Some(pattern) = map.get("pattern").and_then(Value::as_str)
            && let Some(s) = pattern::quote(pattern, min_len, max_len, &self.quotable, self.rng)
                .or_else(|| pattern::sample(pattern, min_len, max_len, self.rng))
        {
            return Value::String(s);
        }
        if let Some(format) = map.get("format").and_then(Value::as_str)
            && let Some(s) = self.formatted(format)
        {
            let len = s.chars().count();
            if len >= min_len && max_len.is_none_or(|m| len <= m) {
                return Value::String(s);
            }
        }
        let text = self.free_text();
        Value::String(fit_length(text, min_len, max_len))
    }

    /// Free text: the conversation hint (once) or a sentence about the property, when good; a
    /// terse placeholder when weak.
    fn free_text(&mut self) -> String {
        let label = self.label.clone().unwrap_or_else(|| "value".to_owned());
        let words = label.replace(['_', '-'], " ");
        if !self.good {
            return ["n/a", "tbd", "unknown"][self.rng.random_range(0..3)].to_owned();
        }
        if let Some(hint) = self.hint.take() {
            let hint: String = hint.chars().take(HINT_CHARS).collect();
            return format!("{words}: {hint}");
        }
        let n: u32 = self.rng.random_range(1..1000);
        format!("A well-supported {words} (ref {n}) drawn from the conversation.")
    }

    fn formatted(&mut self, format: &str) -> Option<String> {
        let n: u32 = self.rng.random_range(1..250);
        let month: u32 = self.rng.random_range(1..=12);
        let day: u32 = self.rng.random_range(1..=28);
        let hour: u32 = self.rng.random_range(0..24);
        let minute: u32 = self.rng.random_range(0..60);
        Some(match format {
            "date-time" => format!("2025-{month:02}-{day:02}T{hour:02}:{minute:02}:00Z"),
            "date" => format!("2025-{month:02}-{day:02}"),
            "time" => format!("{hour:02}:{minute:02}:00Z"),
            "email" | "idn-email" => format!("user{n}@example.com"),
            "hostname" | "idn-hostname" => format!("host{n}.example.com"),
            "ipv4" => format!("192.0.2.{n}"),
            "ipv6" => format!("2001:db8::{n:x}"),
            "uri" | "iri" | "url" => format!("https://example.com/items/{n}"),
            "uri-reference" | "iri-reference" => format!("/items/{n}"),
            "uri-template" => "https://example.com/items/{id}".to_owned(),
            "uuid" => {
                let bytes: [u8; 16] = self.rng.random();
                uuid::Builder::from_random_bytes(bytes)
                    .into_uuid()
                    .hyphenated()
                    .to_string()
            }
            "duration" => format!("PT{n}M"),
            "json-pointer" => format!("/items/{n}"),
            "relative-json-pointer" => "0/items".to_owned(),
            "regex" => "^[a-z]+$".to_owned(),
            _ => return None,
        })
    }

    pub(super) fn gen_integer(&mut self, map: &Map<String, Value>) -> Value {
        let (lo, hi) = int_bounds(map);
        let step = map
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m >= 1.0 && m.fract() == 0.0)
            .map(|m| m as i64);
        let mut value = match (lo, hi) {
            (Some(lo), Some(hi)) if lo <= hi => {
                let mid = lo + (hi - lo) / 2;
                if self.good {
                    self.rng.random_range(mid.max(lo)..=hi)
                } else {
                    self.rng.random_range(lo..=mid)
                }
            }
            (Some(lo), Some(_)) => lo,
            (Some(lo), None) => {
                if self.good {
                    lo.saturating_add(self.rng.random_range(1..=20))
                } else {
                    lo
                }
            }
            (None, Some(hi)) => {
                if self.good {
                    hi.saturating_sub(self.rng.random_range(0..=20))
                } else {
                    hi.min(0)
                }
            }
            (None, None) => {
                if self.good {
                    self.rng.random_range(1..=100)
                } else {
                    0
                }
            }
        };
        if let Some(step) = step {
            value = snap_to_multiple(value, step, lo, hi);
        }
        Value::Number(Number::from(value))
    }

    pub(super) fn gen_number(&mut self, map: &Map<String, Value>) -> Value {
        let step = map
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m > 0.0);
        let (lo, lo_excl) = float_bound(map, "minimum", "exclusiveMinimum");
        let (hi, hi_excl) = float_bound(map, "maximum", "exclusiveMaximum");
        if let Some(step) = step {
            return self.number_multiple(step, lo, lo_excl, hi, hi_excl);
        }
        let value = match (lo, hi) {
            (Some(lo), Some(hi)) if lo < hi => {
                let mid = lo + (hi - lo) / 2.0;
                let (a, b) = if self.good { (mid, hi) } else { (lo, mid) };
                let v = self.rng.random_range(a..=b);
                nudge_inside(v, lo, lo_excl, hi, hi_excl)
            }
            (Some(lo), Some(_)) => lo,
            (Some(lo), None) => {
                let bump = if self.good {
                    self.rng.random_range(1.0..20.0)
                } else if lo_excl {
                    0.5
                } else {
                    0.0
                };
                lo + bump
            }
            (None, Some(hi)) => {
                let drop = if self.good {
                    self.rng.random_range(0.5..20.0)
                } else {
                    0.5
                };
                hi - drop
            }
            (None, None) => {
                if self.good {
                    self.rng.random_range(1.0..100.0)
                } else {
                    0.5
                }
            }
        };
        let rounded = (value * 100.0).round() / 100.0;
        let inside = |v: f64| {
            lo.is_none_or(|lo| if lo_excl { v > lo } else { v >= lo })
                && hi.is_none_or(|hi| if hi_excl { v < hi } else { v <= hi })
        };
        let chosen = if inside(rounded) { rounded } else { value };
        Number::from_f64(chosen).map_or(Value::Null, Value::Number)
    }

    fn number_multiple(
        &mut self,
        step: f64,
        lo: Option<f64>,
        lo_excl: bool,
        hi: Option<f64>,
        hi_excl: bool,
    ) -> Value {
        let mut k_lo = lo.map_or(1.0, |lo| (lo / step).ceil());
        if lo_excl && lo.is_some_and(|lo| (k_lo * step - lo).abs() < f64::EPSILON) {
            k_lo += 1.0;
        }
        let mut k_hi = hi.map_or(k_lo + 20.0, |hi| (hi / step).floor());
        if hi_excl && hi.is_some_and(|hi| (k_hi * step - hi).abs() < f64::EPSILON) {
            k_hi -= 1.0;
        }
        let k = if k_hi > k_lo && self.good {
            self.rng.random_range(k_lo..=k_hi).round()
        } else {
            k_lo
        };
        let decimals = decimals_of(step);
        let factor = 10f64.powi(decimals);
        let value = (k * step * factor).round() / factor;
        if value.fract() == 0.0 && value.abs() < 9.0e15 {
            return Value::Number(Number::from(value as i64));
        }
        Number::from_f64(value).map_or(Value::Null, Value::Number)
    }
}

/// Integer bounds from `minimum`/`maximum`, numeric `exclusiveMinimum`/`exclusiveMaximum` and the
/// draft-4 boolean form.
fn int_bounds(map: &Map<String, Value>) -> (Option<i64>, Option<i64>) {
    let (lo, lo_excl) = float_bound(map, "minimum", "exclusiveMinimum");
    let (hi, hi_excl) = float_bound(map, "maximum", "exclusiveMaximum");
    let lo = lo.map(|lo| {
        let c = lo.ceil();
        if lo_excl && c == lo { c + 1.0 } else { c }
    });
    let hi = hi.map(|hi| {
        let f = hi.floor();
        if hi_excl && f == hi { f - 1.0 } else { f }
    });
    (lo.map(clamp_i64), hi.map(clamp_i64))
}

fn clamp_i64(v: f64) -> i64 {
    v.clamp(-9.0e15, 9.0e15) as i64
}

/// A bound and whether it is exclusive; the tighter of the inclusive and exclusive forms wins.
fn float_bound(map: &Map<String, Value>, inclusive: &str, exclusive: &str) -> (Option<f64>, bool) {
    let incl = map.get(inclusive).and_then(Value::as_f64);
    match map.get(exclusive) {
        Some(Value::Bool(true)) => (incl, incl.is_some()),
        Some(v) => match (v.as_f64(), incl) {
            (Some(x), Some(i)) => {
                let lower = inclusive == "minimum";
                let excl_tighter = if lower { x >= i } else { x <= i };
                if excl_tighter {
                    (Some(x), true)
                } else {
                    (Some(i), false)
                }
            }
            (Some(x), None) => (Some(x), true),
            (None, i) => (i, false),
        },
        None => (incl, false),
    }
}

fn nudge_inside(v: f64, lo: f64, lo_excl: bool, hi: f64, hi_excl: bool) -> f64 {
    let span = (hi - lo).abs();
    if lo_excl && v <= lo {
        lo + span / 4.0
    } else if hi_excl && v >= hi {
        hi - span / 4.0
    } else {
        v
    }
}

fn snap_to_multiple(value: i64, step: i64, lo: Option<i64>, hi: Option<i64>) -> i64 {
    let up = value.div_euclid(step) * step + if value.rem_euclid(step) == 0 { 0 } else { step };
    if hi.is_none_or(|hi| up <= hi) {
        return up;
    }
    let down = value.div_euclid(step) * step;
    if lo.is_none_or(|lo| down >= lo) {
        down
    } else {
        up
    }
}

fn decimals_of(step: f64) -> i32 {
    let text = format!("{step}");
    text.split_once('.')
        .map_or(0, |(_, frac)| frac.len() as i32)
}

/// Pads `text` to `min` chars and cuts it to `max` chars.
pub(super) fn fit_length(mut text: String, min: usize, max: Option<usize>) -> String {
    let mut len = text.chars().count();
    while len < min {
        text.push('x');
        len += 1;
    }
    if let Some(max) = max
        && len > max
    {
        text = text.chars().take(max).collect();
    }
    text
}
