//! Unit tests of the served OpenAPI document.

use super::*;

fn options(with_auth: bool) -> SpecOptions {
    SpecOptions {
        with_auth,
        knowledge_base_ids: vec!["knowledge-base-1".into()],
        virtual_index_graphs: false,
        example_page: Some(("source-file-1".into(), "pages/a.md".into())),
    }
}

fn parameter_names(operation: &Value, location: &str) -> Vec<String> {
    operation["parameters"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter(|p| p["in"] == location)
                .map(|p| p["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn serves_the_read_routes_only_with_kbtools_bounds() {
    let spec = served_spec(&options(false));
    let paths = spec["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 3 + 2 * KB_ROUTES.len());
    assert!(paths.values().all(|p| p.as_object().unwrap().len() == 1));
    let tree = &paths["/openapi/v2/knowledge-bases/{knowledgeBaseId}/tree"]["get"];
    assert!(!parameter_names(tree, "query").contains(&"entryType".to_string()));
    let limit = tree["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap();
    // An integer 1–500, or a blank value (omitted).
    assert_eq!(limit["schema"]["anyOf"][0]["maximum"], 500);
    assert_eq!(limit["schema"]["anyOf"][0]["minimum"], 1);
    assert_eq!(limit["schema"]["anyOf"][1]["type"], "string");
    assert!(tree.get("security").is_none());
    assert_eq!(spec["security"], json!([]));
    let short = &paths["/search"]["get"];
    assert_eq!(short["operationId"], "searchGeneratedFilesShort");
    assert!(served_spec(&options(true))["paths"]["/tree"]["get"]["security"].is_array());
}

#[test]
fn query_parameters_are_exactly_the_server_allowlist() {
    let spec = served_spec(&options(false));
    for route in &KB_ROUTES {
        for path in [format!("{BASE}{}", route.path), route.short.to_string()] {
            let operation = &spec["paths"][&path]["get"];
            let mut declared = parameter_names(operation, "query");
            declared.sort();
            let mut allowed: Vec<String> = route.query().iter().map(|s| s.to_string()).collect();
            allowed.sort();
            assert_eq!(declared, allowed, "{path}");
            for status in ["404", "413", "422", "500", "503"] {
                assert!(
                    operation["responses"].get(status).is_some(),
                    "{path} {status}"
                );
            }
            assert!(operation["responses"].get("429").is_none());
        }
    }
    let kbs = &spec["paths"]["/openapi/v2/knowledge-bases"]["get"];
    assert_eq!(
        parameter_names(kbs, "query"),
        KNOWLEDGE_BASES_PARAMETERS.to_vec()
    );
}

#[test]
fn component_schemas_are_only_those_referenced() {
    let spec = served_spec(&options(false));
    let schemas = spec["components"]["schemas"].as_object().unwrap();
    assert!(schemas.contains_key("GeneratedTreeEntry"));
    assert!(schemas.contains_key("Error"));
    assert!(!schemas.contains_key("UploadSession"));
    assert!(!schemas.contains_key("Webhook"));
    let text = spec.to_string();
    let mut refs = Vec::new();
    collect_refs(&spec, &mut refs);
    for name in refs {
        assert!(schemas.contains_key(&name), "{name} referenced but dropped");
    }
    assert!(!text.contains("\"Upload Sessions\""));
}
