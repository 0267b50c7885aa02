use super::*;

#[test]
fn builder_validates_ranges_and_duplicates() {
    let bad = Profile {
        latency_ms: [10, 5],
        ..Profile::default()
    };
    assert!(
        SimConfig::builder()
            .model(SimModel::new("a").profile(bad))
            .build()
            .is_err()
    );
    assert!(
        SimConfig::builder()
            .model(SimModel::new("a"))
            .model(SimModel::new("a"))
            .build()
            .is_err()
    );
    let ok = SimConfig::builder()
        .model(SimModel::new("a").tpm(10))
        .seed(3)
        .build()
        .unwrap();
    let refuses = |format: &str| Profile {
        refused_formats: vec![format.to_owned()],
        ..Profile::default()
    };
    for (format, valid) in [
        ("json_schema", true),
        ("json_object", true),
        ("grammar", false),
    ] {
        let built = SimConfig::builder()
            .model(SimModel::new("a").profile(refuses(format)))
            .build();
        assert_eq!(built.is_ok(), valid, "{format}");
    }
    assert!(!ok.accepts_any_model());
    assert!(SimConfig::default().accepts_any_model());
    assert_eq!(ok.models[0].tpm, Some(10));
}

#[test]
fn config_deserializes_from_json_with_defaults() {
    let cfg: SimConfig =
        serde_json::from_str(r#"{"models":[{"name":"m","profile":{"tool_rounds":2}}]}"#).unwrap();
    let model = &cfg.models[0];
    assert!(model.native_tools);
    assert_eq!(model.output_ceiling, DEFAULT_OUTPUT_CEILING);
    let profile = model.profile.as_ref().unwrap();
    assert_eq!(profile.tool_rounds, 2);
    assert_eq!(profile.parallel_tool_calls, 1);
    assert_eq!(cfg.hang_ms, DEFAULT_HANG_MS);
}

#[test]
fn limit_fields_deserialize_and_build() {
    let cfg: SimConfig = serde_json::from_str(
        r#"{"models":[{"name":"m","itpm":40000,"otpm":8000,"max_concurrency":4,
            "limit_shape":"token_bucket","limit_window_ms":10000}]}"#,
    )
    .unwrap();
    cfg.validate().unwrap();
    let m = &cfg.models[0];
    assert_eq!(
        (m.itpm, m.otpm, m.max_concurrency),
        (Some(40_000), Some(8_000), Some(4))
    );
    assert_eq!(m.limit_shape, LimitShape::TokenBucket);
    assert_eq!(
        m.limit_window_duration(),
        std::time::Duration::from_secs(10)
    );
    let built = SimModel::new("m")
        .itpm(40_000)
        .otpm(8_000)
        .max_concurrency(4)
        .limit_shape(LimitShape::TokenBucket)
        .limit_window(std::time::Duration::from_secs(10));
    assert_eq!(&built, m);
    // The default is a sliding minute; a longer window is the minute.
    let plain: SimModel = serde_json::from_str(r#"{"name":"p","limit_window_ms":90000}"#).unwrap();
    assert_eq!(plain.limit_shape, LimitShape::Sliding);
    assert_eq!(plain.limit_window_duration(), WINDOW);
    assert_eq!(
        serde_json::to_value(&built).unwrap()["limit_shape"],
        "token_bucket"
    );
}

#[test]
fn bad_limit_values_are_typed_errors_naming_field_and_value() {
    let err = serde_json::from_str::<SimModel>(r#"{"name":"m","limit_shape":"leaky"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown limit_shape `leaky`"), "{err}");
    for (model, field) in [
        (SimModel::new("m").rpm(0), "rpm"),
        (SimModel::new("m").tpm(0), "tpm"),
        (SimModel::new("m").itpm(0), "itpm"),
        (SimModel::new("m").otpm(0), "otpm"),
        (SimModel::new("m").max_concurrency(0), "max_concurrency"),
        (
            SimModel::new("m").limit_window(std::time::Duration::ZERO),
            "limit_window_ms",
        ),
    ] {
        let err = SimConfig::builder().model(model).build().unwrap_err();
        let text = err.to_string();
        match err {
            SimError::InvalidLimit {
                model,
                field: f,
                value,
                ..
            } => {
                assert_eq!((model.as_str(), f, value.as_str()), ("m", field, "0"));
            }
            other => panic!("{other:?}"),
        }
        assert!(text.contains(&format!("{field} = 0")), "{text}");
    }
    let err: SimError = "bucket".parse::<LimitShape>().unwrap_err().into();
    assert!(err.to_string().contains("`bucket`"), "{err}");
}
