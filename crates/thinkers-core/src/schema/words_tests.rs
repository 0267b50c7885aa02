//! Unit tests of the shared refusal wording: places and problems from the schema only.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::*;

const CANARY: &str = "CANARY-words-e41";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // Read only through the decoder.
enum Shape {
    Dot,
    Box { side: u32 },
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Read only through the decoder.
struct Item {
    name: String,
    size: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // Read only through the decoder.
struct Doc {
    items: Vec<Item>,
    by_name: BTreeMap<String, Item>,
    shape: Shape,
}

fn misfit_of(value: &Value) -> Misfit {
    let schema = crate::schema::of::<Doc>();
    let e = crate::schema::decode_tracked::<Doc>(value).expect_err("a misfit");
    SchemaWords::new(&schema).misfit(&e)
}

fn good() -> Value {
    json!({"items": [], "by_name": {}, "shape": "dot"})
}

#[test]
fn places_name_declared_keys_and_never_invented_ones() {
    let mut entry = good();
    entry["by_name"] = json!({CANARY: {"name": "a", "size": CANARY}});
    let mut undeclared = good();
    undeclared["items"] = json!([{"name": "a", "size": 1, CANARY: 2}]);
    let mut missing = good();
    missing["by_name"] = json!({CANARY: {"size": 1}});
    let mut tag = good();
    tag["shape"] = json!({CANARY: {"side": 1}});
    let mut variant_field = good();
    variant_field["shape"] = json!({"box": {"side": CANARY}});
    let cases = [
        (entry, "field `by_name entry.size` must be an integer"),
        (
            undeclared,
            "field `items[0]` has a field its type does not declare; the declared fields are \
             `name` (a string) and `size` (an integer)",
        ),
        (
            missing,
            "the required field `by_name entry.name` is missing; it must be a string",
        ),
        (tag, "field `shape` must be"),
        (variant_field, "field `shape.box.side` must be an integer"),
    ];
    for (value, expected) in cases {
        let text = misfit_of(&value).sentence(None);
        assert!(text.contains(expected), "{value}: {text}");
        assert!(!text.contains(CANARY), "{value}: {text}");
        let rooted = misfit_of(&value).sentence(Some("answer"));
        assert!(rooted.contains("`answer."), "{rooted}");
        assert!(!rooted.contains(CANARY), "{rooted}");
    }
}

#[test]
fn an_entry_of_a_root_map_is_named_under_the_root() {
    let schema = crate::schema::of::<BTreeMap<String, u32>>();
    let e = crate::schema::decode_tracked::<BTreeMap<String, u32>>(&json!({CANARY: "x"}))
        .expect_err("a misfit");
    let misfit = SchemaWords::new(&schema).misfit(&e);
    assert_eq!(misfit.at, "an entry");
    assert_eq!(misfit.name(Some("answer")), "answer entry");
    assert_eq!(
        misfit.sentence(Some("answer")),
        "field `answer entry` must be an integer"
    );
}
