//! NetworkPolicy defaults and validation against upstream's field paths and messages, and
//! the strategy through a real registry (stored form, generation, 422s).
#![allow(clippy::unwrap_used)]

use kplane_types::Cause;
use serde_json::{json, Value};

use super::{default, validate};
use crate::options::WriteParams;
use crate::testing::{self, target};

const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const BAD_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
const RANGE: &str = "must be between 1 and 65535, inclusive";

fn rendered(causes: &[Cause]) -> Vec<String> {
    causes.iter().map(Cause::render).collect()
}

fn policy(spec: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
           "metadata": {"name": "np", "namespace": "default"}, "spec": spec})
}

fn defaulted(spec: Value) -> Value {
    let mut obj = policy(spec);
    default(&mut obj);
    obj["spec"].take()
}

#[test]
fn policy_types_default_to_ingress_plus_egress_with_egress_rules() {
    assert_eq!(
        defaulted(json!({"podSelector": {}}))["policyTypes"],
        json!(["Ingress"])
    );
    assert_eq!(
        defaulted(json!({"podSelector": {}, "egress": [{}]}))["policyTypes"],
        json!(["Ingress", "Egress"])
    );
    // Empty egress rules are no egress rules; null or empty types are unset.
    assert_eq!(
        defaulted(json!({"egress": [], "policyTypes": null}))["policyTypes"],
        json!(["Ingress"])
    );
    assert_eq!(
        defaulted(json!({"egress": [{}], "policyTypes": []}))["policyTypes"],
        json!(["Ingress", "Egress"])
    );
    // Set types are kept, even egress-only ones with ingress rules.
    assert_eq!(
        defaulted(json!({"ingress": [{}], "policyTypes": ["Egress"]}))["policyTypes"],
        json!(["Egress"])
    );
    // A policy without a spec gets one.
    let mut bare = json!({"metadata": {"name": "np"}});
    default(&mut bare);
    assert_eq!(bare["spec"], json!({"policyTypes": ["Ingress"]}));
}

#[test]
fn ports_without_a_protocol_default_to_tcp() {
    let spec = defaulted(json!({
        "ingress": [{"ports": [{"port": 80}, {"protocol": "UDP", "port": 53}, {"protocol": null}]}],
        "egress": [{"ports": [{"port": "dns"}, {"protocol": ""}]}],
    }));
    assert_eq!(
        spec["ingress"][0]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"protocol": "UDP", "port": 53}, {"protocol": "TCP"}])
    );
    // An explicit empty protocol is a value (validation refuses it), not unset.
    assert_eq!(
        spec["egress"][0]["ports"],
        json!([{"port": "dns", "protocol": "TCP"}, {"protocol": ""}])
    );
}

/// Each spec (defaulted, as the write path validates it) and the causes of its create.
#[test]
fn invalid_specs_get_upstreams_paths_and_messages() {
    let ingress = |rule: Value| json!({"podSelector": {}, "ingress": [rule]});
    let from = |peer: Value| ingress(json!({"from": [peer]}));
    let port = |p: Value| ingress(json!({"ports": [p]}));
    let p = "spec.ingress[0].ports[0]";
    let f = "spec.ingress[0].from[0]";
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!({"podSelector": {}}), vec![]),
        (
            json!({"podSelector": {"matchExpressions": [{"key": "app", "operator": "Near"}],
                                   "matchLabels": {"tier": "not valid!"}}}),
            vec![
                format!("spec.podSelector.matchLabels: Invalid value: \"not valid!\": {LABEL_VALUE}"),
                "spec.podSelector.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator".into(),
            ],
        ),
        (
            from(json!({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}})),
            vec![format!("{f}.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'")],
        ),
        (
            from(json!({})),
            vec![format!("{f}: Required value: must specify a peer")],
        ),
        (
            from(json!({"podSelector": {}, "namespaceSelector": {}})),
            vec![],
        ),
        (
            from(json!({"podSelector": {}, "ipBlock": {"cidr": "10.0.0.0/8"}})),
            vec![format!("{f}: Forbidden: may not specify both ipBlock and another peer")],
        ),
        (
            from(json!({"ipBlock": {"cidr": ""}})),
            vec![format!("{f}.ipBlock.cidr: Required value")],
        ),
        (
            from(json!({"ipBlock": {"cidr": "10.0.0.1"}})),
            vec![format!("{f}.ipBlock.cidr: Invalid value: \"10.0.0.1\": {BAD_CIDR}")],
        ),
        (
            // Leading zeros parse (ParseCIDRSloppy).
            from(json!({"ipBlock": {"cidr": "010.0.0.0/8", "except": ["10.1.0.0/16"]}})),
            vec![],
        ),
        (
            from(json!({"ipBlock": {"cidr": "10.0.0.0/8",
                "except": ["10.1.0.0/16", "192.168.0.0/16", "10.0.0.0/8", "10.0.0.0/4", "nope"]}})),
            vec![
                format!("{f}.ipBlock.except[1]: Invalid value: \"192.168.0.0/16\": must be a strict subset of `cidr`"),
                format!("{f}.ipBlock.except[2]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`"),
                format!("{f}.ipBlock.except[3]: Invalid value: \"10.0.0.0/4\": must be a strict subset of `cidr`"),
                format!("{f}.ipBlock.except[4]: Invalid value: \"nope\": {BAD_CIDR}"),
            ],
        ),
        (
            from(json!({"ipBlock": {"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48", "10.0.0.0/8"]}})),
            vec![format!("{f}.ipBlock.except[1]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`")],
        ),
        (
            port(json!({"port": 0})),
            vec![format!("{p}.port: Invalid value: 0: {RANGE}")],
        ),
        (
            port(json!({"port": 65536, "endPort": 65537})),
            vec![
                format!("{p}.port: Invalid value: 65536: {RANGE}"),
                format!("{p}.endPort: Invalid value: 65537: {RANGE}"),
            ],
        ),
        (port(json!({"port": 80, "endPort": 90})), vec![]),
        (
            port(json!({"endPort": 90})),
            vec![format!("{p}.endPort: Invalid value: 90: may not be specified when `port` is not specified")],
        ),
        (
            // Upstream shows the port's value in this message.
            port(json!({"port": 90, "endPort": 80})),
            vec![format!("{p}.endPort: Invalid value: 90: must be greater than or equal to `port`")],
        ),
        (
            port(json!({"port": "http", "endPort": 90})),
            vec![format!("{p}.endPort: Invalid value: 90: may not be specified when `port` is non-numeric")],
        ),
        (
            port(json!({"port": "HTTP"})),
            vec![
                format!("{p}.port: Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
                format!("{p}.port: Invalid value: \"HTTP\": must contain at least one letter (a-z)"),
            ],
        ),
        (
            port(json!({"port": ""})),
            vec![
                format!("{p}.port: Invalid value: \"\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
                format!("{p}.port: Invalid value: \"\": must contain at least one letter (a-z)"),
            ],
        ),
        (
            port(json!({"protocol": "ICMP", "port": 80})),
            vec![format!("{p}.protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"")],
        ),
        (
            port(json!({"protocol": ""})),
            vec![format!("{p}.protocol: Unsupported value: \"\": supported values: \"TCP\", \"UDP\", \"SCTP\"")],
        ),
        (
            json!({"egress": [{"ports": [{"port": 70000}], "to": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}),
            vec![
                format!("spec.egress[0].ports[0].port: Invalid value: 70000: {RANGE}"),
                format!("spec.egress[0].to[0].ipBlock.cidr: Invalid value: \"10.0.0.0/33\": {BAD_CIDR}"),
            ],
        ),
        (
            json!({"policyTypes": ["Ingress", "Sideways"]}),
            vec!["spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"".into()],
        ),
        (
            json!({"policyTypes": ["Ingress", "Egress", "Sideways"]}),
            vec!["spec.policyTypes: Invalid value: []networking.PolicyType{\"Ingress\", \"Egress\", \"Sideways\"}: may not specify more than two policyTypes".into()],
        ),
    ];
    for (spec, want) in cases {
        let mut obj = policy(spec.clone());
        default(&mut obj);
        assert_eq!(rendered(&validate(&obj, None)), want, "{spec}");
    }
}

#[test]
fn an_update_lists_each_spec_error_twice_as_upstream_does() {
    let old = policy(json!({"podSelector": {}, "policyTypes": ["Ingress"]}));
    let new = policy(json!({"podSelector": {}, "policyTypes": ["Sideways"]}));
    let once = "spec.policyTypes[0]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"";
    assert_eq!(rendered(&validate(&new, Some(&old))), [once, once]);
    assert!(validate(&old, Some(&old)).is_empty());
}

#[test]
fn a_stored_pod_selector_that_fails_validation_allows_invalid_values_on_update() {
    let bad_values =
        json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["not valid!"]}]});
    let new = policy(
        json!({"podSelector": bad_values, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"namespaceSelector": bad_values}]}]}),
    );
    let field = |c: &Cause| c.field.clone();
    // On create, and over a valid stored selector, each value is refused (twice on update).
    assert_eq!(
        validate(&new, None).iter().map(field).collect::<Vec<_>>(),
        [
            "spec.podSelector.matchExpressions[0].values[0]",
            "spec.ingress[0].from[0].namespaceSelector.matchExpressions[0].values[0]",
        ]
    );
    let valid_old = policy(json!({"podSelector": {}}));
    assert_eq!(validate(&new, Some(&valid_old)).len(), 4);
    // Over a stored selector with any error, values are not checked anywhere in the spec.
    let invalid_old =
        policy(json!({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}));
    assert!(validate(&new, Some(&invalid_old)).is_empty());
    // Other selector errors still count.
    let wrong_op =
        policy(json!({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}));
    assert_eq!(validate(&wrong_op, Some(&invalid_old)).len(), 2);
}

#[tokio::test]
async fn written_policies_are_defaulted_and_count_spec_changes_in_their_generation() {
    let fx = testing::fixture().await;
    let reg = &fx.reg;
    let t = target(reg, "networking.k8s.io", "networkpolicies", Some("default"));
    let w = WriteParams::default();
    let created = reg
        .create(
            &t,
            policy(json!({"podSelector": {"matchLabels": {"app": "db"}},
                "ingress": [{"ports": [{"port": 5432}], "from": [{"podSelector": {}}]}],
                "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": []}}]}]})),
            &w,
        )
        .await
        .unwrap();
    let created: Value = serde_json::from_slice(&created).unwrap();
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(
        created["spec"],
        json!({"podSelector": {"matchLabels": {"app": "db"}},
            "ingress": [{"ports": [{"port": 5432, "protocol": "TCP"}], "from": [{"podSelector": {}}]}],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}],
            "policyTypes": ["Ingress", "Egress"]})
    );

    // A metadata change keeps the generation.
    let mut labelled = created.clone();
    labelled["metadata"]["labels"] = json!({"team": "a"});
    let (after, _) = reg.update(&t, "np", None, labelled, &w).await.unwrap();
    let after: Value = serde_json::from_slice(&after).unwrap();
    assert_eq!(after["metadata"]["generation"], 1);
    assert_eq!(after["metadata"]["labels"], json!({"team": "a"}));

    // A spec that defaults to the stored one keeps it too; a changed spec bumps it.
    let mut same = after.clone();
    same["spec"]["ingress"][0]["ports"][0]
        .as_object_mut()
        .unwrap()
        .remove("protocol");
    let (after, _) = reg.update(&t, "np", None, same, &w).await.unwrap();
    let after: Value = serde_json::from_slice(&after).unwrap();
    assert_eq!(after["metadata"]["generation"], 1);
    let mut changed = after.clone();
    changed["spec"]["ingress"][0]["ports"][0]["endPort"] = json!(5440);
    let (after, _) = reg.update(&t, "np", None, changed, &w).await.unwrap();
    let after: Value = serde_json::from_slice(&after).unwrap();
    assert_eq!(after["metadata"]["generation"], 2);

    // A client's generation is ignored.
    let mut forged = after.clone();
    forged["metadata"]["generation"] = json!(7);
    let (after, _) = reg.update(&t, "np", None, forged, &w).await.unwrap();
    let after: Value = serde_json::from_slice(&after).unwrap();
    assert_eq!(after["metadata"]["generation"], 2);
}

#[tokio::test]
async fn an_invalid_policy_is_a_422_naming_the_kind_and_group() {
    let fx = testing::fixture().await;
    let reg = &fx.reg;
    let t = target(reg, "networking.k8s.io", "networkpolicies", Some("default"));
    let bad = policy(
        json!({"ingress": [{"from": [{"podSelector": {}, "ipBlock": {"cidr": "10.0.0.0/8"}}],
        "ports": [{"port": "http", "endPort": 90}]}]}),
    );
    let err = reg
        .create(&t, bad, &WriteParams::default())
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), 422);
    assert_eq!(
        err.0.message,
        "NetworkPolicy.networking.k8s.io \"np\" is invalid: [\
         spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric, \
         spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer]"
    );
}
