//! Property checks: every generated value validates (Draft 2020-12, formats on), every violation
//! does not, and generation is deterministic.

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use super::*;

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap()
}

fn schemas() -> Vec<Value> {
    vec![
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["vendor", "total_cents", "unit", "tags", "when"],
            "properties": {
                "vendor": {"type": "string", "minLength": 3, "maxLength": 12},
                "total_cents": {"type": "integer", "minimum": 100, "maximum": 200, "multipleOf": 5},
                "unit": {"type": ["string", "null"], "enum": ["c", "f", null]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]},
                          "minItems": 2, "maxItems": 3, "uniqueItems": true},
                "when": {"type": "string", "format": "date-time"}
            }
        }),
        json!({
            "$defs": {
                "node": {"type": "object", "required": ["name", "children"], "properties": {
                    "name": {"type": "string", "pattern": "^[a-z]{2,5}-\\d{2}$"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                }}
            },
            "$ref": "#/$defs/node"
        }),
        json!({
            "definitions": {"kind": {"oneOf": [{"const": "alpha", "description": "A"}, {"const": "beta"}]}},
            "type": "object",
            "required": ["kind", "score", "ratio", "ok", "email", "id", "site", "day"],
            "properties": {
                "kind": {"$ref": "#/definitions/kind"},
                "score": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "ratio": {"type": "number", "multipleOf": 0.25, "minimum": 1, "maximum": 2},
                "ok": {"type": "boolean"},
                "email": {"type": "string", "format": "email"},
                "id": {"type": "string", "format": "uuid"},
                "site": {"type": "string", "format": "uri"},
                "day": {"type": "string", "format": "date"}
            }
        }),
        json!({
            "type": "object",
            "properties": {
                "choice": {"anyOf": [{"type": "integer", "maximum": -5}, {"type": "string", "minLength": 4}]},
                "merged": {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                     {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
                "tuple": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false},
                "bag": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}},
                "n": {"type": "integer", "exclusiveMinimum": 7, "exclusiveMaximum": 9}
            },
            "required": ["choice", "merged", "tuple", "bag", "n"]
        }),
        json!({"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number", "minimum": -1.5, "maximum": -1.25}}, "required": ["x"]}, "minItems": 3}),
        json!({"type": "string", "minLength": 50}),
        json!({"type": "object", "properties": {"opt": {"type": "string"}},
               "dependentRequired": {"opt": ["other"]}, "required": ["opt"]}),
        json!({"type": "object", "required": ["tool_names"], "properties": {"tool_names": {
            "type": "array", "minItems": 1, "items": {"oneOf": [
                {"const": "web_fetch", "description": "Fetch a page"},
                {"const": "summarize", "description": "Summarize"}]}}}}),
    ]
}

#[test]
fn generated_values_validate_for_many_seeds() {
    for schema in schemas() {
        let v = validator(&schema);
        for seed in 0..40 {
            for good in [true, false] {
                let mut rng = StdRng::seed_from_u64(seed);
                let sample = sample_with(
                    &schema,
                    &mut rng,
                    SampleOptions {
                        good,
                        hint: Some("the tool said 42".into()),
                        ..SampleOptions::default()
                    },
                );
                let errors: Vec<String> = v
                    .iter_errors(&sample.value)
                    .map(|e| e.to_string())
                    .collect();
                assert!(
                    errors.is_empty(),
                    "seed {seed} good {good}: {} is invalid for {schema}: {errors:?}",
                    sample.value
                );
            }
        }
    }
}

#[test]
fn violations_do_not_validate() {
    for schema in schemas() {
        let v = validator(&schema);
        for seed in 0..10 {
            let mut rng = StdRng::seed_from_u64(seed);
            let (bad, why) = violate(&schema, &mut rng);
            assert!(!v.is_valid(&bad), "{bad} should break {schema} ({why})");
        }
    }
}

#[test]
fn generation_is_deterministic_and_good_values_carry_the_hint() {
    let schema = &schemas()[1];
    assert_eq!(sample_value(schema, 9), sample_value(schema, 9));
    let with_hint = |good| {
        let mut rng = StdRng::seed_from_u64(1);
        sample_with(
            &json!({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
            &mut rng,
            SampleOptions {
                good,
                hint: Some("it rained in Paris".into()),
                ..SampleOptions::default()
            },
        )
        .value
    };
    assert!(
        with_hint(true)["summary"]
            .as_str()
            .unwrap()
            .contains("it rained in Paris")
    );
    assert!(
        !with_hint(false)["summary"]
            .as_str()
            .unwrap()
            .contains("Paris")
    );
}

#[test]
fn weak_values_sit_lower_than_good_ones() {
    let schema = json!({"type": "integer", "minimum": 0, "maximum": 10});
    for seed in 0..20 {
        let mut rng = StdRng::seed_from_u64(seed);
        let good = sample_with(
            &schema,
            &mut rng,
            SampleOptions {
                good: true,
                hint: None,
                ..SampleOptions::default()
            },
        )
        .value;
        let weak = sample_with(
            &schema,
            &mut rng,
            SampleOptions {
                good: false,
                hint: None,
                ..SampleOptions::default()
            },
        )
        .value;
        assert!(good.as_i64().unwrap() >= 5, "{good}");
        assert!(weak.as_i64().unwrap() <= 5, "{weak}");
    }
}

#[test]
fn enum_choices_are_recorded() {
    let mut rng = StdRng::seed_from_u64(3);
    let sample = sample_with(
        &json!({"type": "object", "required": ["pick"], "properties": {"pick": {"enum": ["x", "y", "z"]}}}),
        &mut rng,
        SampleOptions::default(),
    );
    assert_eq!(sample.choices.len(), 1);
    let choice = &sample.choices[0];
    assert_eq!(sample.value["pick"], json!(choice.chosen));
    assert_eq!(choice.others.len(), 2);
    assert!(!choice.others.contains(&choice.chosen));
}

#[test]
fn a_pattern_string_copies_a_matching_word_of_the_conversation() {
    let schema = json!({
        "type": "object",
        "required": ["refs"],
        "properties": {"refs": {"type": "array", "minItems": 1,
                                "items": {"type": "string", "pattern": "^@a[0-9]+$"}}}
    });
    assert!(has_pattern(&schema));
    assert!(!has_pattern(
        &json!({"type": "object", "properties": {"pattern": {"type": "string"}}})
    ));
    let quotable = vec!["lookup".to_owned(), "@a7".to_owned(), "@b2".to_owned()];
    for seed in 0..50 {
        let mut rng = StdRng::seed_from_u64(seed);
        for good in [true, false] {
            let sample = sample_with(
                &schema,
                &mut rng,
                SampleOptions {
                    good,
                    quotable: quotable.clone(),
                    ..SampleOptions::default()
                },
            );
            let refs = sample.value["refs"].as_array().unwrap();
            assert!(!refs.is_empty());
            assert!(refs.iter().all(|r| r == "@a7"), "{}", sample.value);
        }
    }
    // Nothing to copy: the pattern is sampled, and the value still validates.
    let mut rng = StdRng::seed_from_u64(1);
    let invented = sample_with(&schema, &mut rng, SampleOptions::default()).value;
    assert!(validator(&schema).is_valid(&invented), "{invented}");
}
