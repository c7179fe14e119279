#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

fn original() -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
            "labels": {"l": "1"}, "generation": 2},
        "spec": {"hostPort": "h:1"}})
}

fn converted() -> Value {
    json!({"apiVersion": "example.com/v2", "kind": "Widget",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
            "labels": {"l": "1"}, "generation": 2},
        "spec": {"host": "h", "port": 1}})
}

fn answer(uid: &str, objects: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": uid, "result": {"status": "Success"}, "convertedObjects": objects}})
}

#[test]
fn the_request_carries_uid_desired_version_and_objects() {
    let r = request("v1", "u-1", "example.com/v2", &[original()]);
    assert_eq!(r["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(r["kind"], "ConversionReview");
    assert_eq!(r["request"]["uid"], "u-1");
    assert_eq!(r["request"]["desiredAPIVersion"], "example.com/v2");
    assert_eq!(r["request"]["objects"], json!([original()]));
}

#[test]
fn the_first_known_review_version_is_sent() {
    let v = |l: &[&str]| review_version(&l.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(v(&["v2", "v1beta1", "v1"]), Some("v1beta1"));
    assert_eq!(v(&["v1", "v1beta1"]), Some("v1"));
    assert_eq!(v(&["v2"]), None);
}

#[test]
fn answers_are_checked_as_upstream_checks_them() {
    assert_eq!(
        converted_objects("v1", "u", &answer("u", json!([converted()]))).unwrap(),
        vec![converted()]
    );
    assert_eq!(
        converted_objects("v1", "u", &answer("other", json!([]))).unwrap_err(),
        "failed: expected response.uid=\"u\", got \"other\""
    );
    let mut wrong_kind = answer("u", json!([]));
    wrong_kind["kind"] = json!("AdmissionReview");
    assert_eq!(
        converted_objects("v1", "u", &wrong_kind).unwrap_err(),
        "failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=AdmissionReview"
    );
    let no_response = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"});
    assert_eq!(
        converted_objects("v1", "u", &no_response).unwrap_err(),
        "failed: no response provided"
    );
    let mut refused = answer("u", json!([]));
    refused["response"]["result"] =
        json!({"status": "Failure", "message": "custom webhook conversion error"});
    assert_eq!(
        converted_objects("v1", "u", &refused).unwrap_err(),
        "failed: custom webhook conversion error"
    );
    refused["response"]["result"] = json!({"status": "Failure"});
    assert_eq!(
        converted_objects("v1", "u", &refused).unwrap_err(),
        "failed: response.result.status was 'Failure', not 'Success'"
    );
    // v1beta1 answers are not held to the uid or the review's kind.
    let mut beta = answer("other", json!([converted()]));
    beta["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
    assert_eq!(converted_objects("v1beta1", "u", &beta).unwrap().len(), 1);
}

#[test]
fn converted_objects_keep_the_original_metadata_but_labels_and_annotations() {
    let mut c = converted();
    c["metadata"]["resourceVersion"] = json!("99");
    c["metadata"]["generation"] = json!(5);
    c["metadata"]["labels"] = json!({"l": "2"});
    c["metadata"]["annotations"] = json!({"a": "b"});
    let out = accept(&original(), c, "example.com/v2", Place::Single).unwrap();
    assert_eq!(out["metadata"]["resourceVersion"], "7");
    assert_eq!(out["metadata"]["generation"], 2);
    assert_eq!(out["metadata"]["labels"], json!({"l": "2"}));
    assert_eq!(out["metadata"]["annotations"], json!({"a": "b"}));
    assert_eq!(out["spec"], json!({"host": "h", "port": 1}));
    // Labels the webhook leaves out are gone, as upstream drops them.
    let mut c = converted();
    c["metadata"].as_object_mut().unwrap().remove("labels");
    let out = accept(&original(), c, "example.com/v2", Place::Single).unwrap();
    assert!(out["metadata"].get("labels").is_none());
}

#[test]
fn converted_objects_with_another_identity_or_version_are_refused() {
    let check = |f: &dyn Fn(&mut Value), at: Place| {
        let mut c = converted();
        f(&mut c);
        accept(&original(), c, "example.com/v2", at).unwrap_err()
    };
    assert_eq!(
        check(&|c| c["apiVersion"] = json!("example.com/v1"), Place::Single),
        "returned invalid object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v1)"
    );
    assert_eq!(
        check(&|c| c["apiVersion"] = json!("example.com/v3"), Place::Listed(2)),
        "returned invalid converted object at index 2: invalid groupVersion (expected example.com/v2, received example.com/v3)"
    );
    assert_eq!(
        check(&|c| c["kind"] = json!("Gadget"), Place::Single),
        "returned invalid object at index 0: invalid kind (expected Widget, received Gadget)"
    );
    assert_eq!(
        check(&|c| c["metadata"]["name"] = json!("b"), Place::Single),
        "returned invalid object: must have the same name: a != b"
    );
    assert_eq!(
        check(&|c| c["metadata"]["uid"] = json!("u2"), Place::Listed(0)),
        "returned invalid converted object at index 0: must have the same UID: u1 != u2"
    );
    assert_eq!(
        check(
            &|c| c["metadata"]["namespace"] = json!("other"),
            Place::Single
        ),
        "returned invalid object: must have the same namespace: ns != other"
    );
    assert_eq!(
        check(&|c| c["metadata"]["labels"] = json!({"l": 1}), Place::Single),
        "returned invalid metadata: metadata.labels[l] must be a string, but is int64 in converted object"
    );
    assert_eq!(
        check(&|c| c["metadata"]["labels"] = json!({"bad key!": "x"}), Place::Listed(1)),
        "returned invalid metadata in object at index 1: metadata.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
    assert_eq!(
        check(
            &|c| {
                c.as_object_mut().unwrap().remove("metadata");
            },
            Place::Single
        ),
        "returned invalid object: must have the same name: a != "
    );
}

#[test]
fn http_failures_read_as_client_go_words_them() {
    assert_eq!(
        http_error(400, b"nope"),
        "the server rejected our request for an unknown reason"
    );
    assert_eq!(
        http_error(500, b"boom\n"),
        "an error on the server (\"boom\") has prevented the request from succeeding"
    );
    assert_eq!(
        http_error(502, br#"{"kind":"Status","message":"down"}"#),
        "down"
    );
    assert_eq!(
        http_error(302, b""),
        "the server responded with the status code 302 but did not return more information"
    );
}
