//! The rules of a CRD's `spec.conversion` (apiextensions' `validateCustomResourceConversion`
//! and `validateConversionReviewVersions`). As upstream, which validates the internal form,
//! errors name the internal fields: `spec.conversion.webhookClientConfig` for
//! `spec.conversion.webhook.clientConfig`, `spec.conversion.conversionReviewVersions` for
//! `spec.conversion.webhook.conversionReviewVersions`.

use base64::Engine as _;
use kplane_types::{validation, Cause};
use serde_json::{json, Value};

use crate::json_map::strings;
use crate::webhooks::config::{go_strings, invalid_raw, validate_client_config};

const ACCEPTED: &[&str] = &["v1", "v1beta1"];
const PATH: &str = "spec.conversion";

/// The causes of `crd`'s conversion (`old` on update).
pub(super) fn validate(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    let Some(conversion) = crd.pointer("/spec/conversion").filter(|c| !c.is_null()) else {
        return vec![];
    };
    let mut causes = Vec::new();
    let strategy = conversion
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or("");
    let preserve = crd.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true));
    if strategy != "None" && preserve {
        causes.push(Cause::invalid(
            format!("{PATH}.strategy"),
            &json!(strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    match strategy {
        "" => causes.push(Cause::required(format!("{PATH}.strategy"))),
        "None" | "Webhook" => {}
        other => causes.push(Cause::not_supported(
            format!("{PATH}.strategy"),
            &json!(other),
            &["None", "Webhook"],
        )),
    }
    let client = conversion
        .pointer("/webhook/clientConfig")
        .filter(|c| !c.is_null());
    let versions = strings(conversion.pointer("/webhook/conversionReviewVersions"));
    let cc_path = format!("{PATH}.webhookClientConfig");
    let versions_path = format!("{PATH}.conversionReviewVersions");
    if strategy == "Webhook" {
        match client {
            None => causes.push(Cause::new(
                kplane_types::CauseType::FieldValueRequired,
                &cc_path,
                "Required value: required when strategy is set to Webhook",
            )),
            Some(cc) => {
                causes.extend(validate_client_config(cc, &cc_path));
                let bundle = cc.get("caBundle").and_then(Value::as_str).unwrap_or("");
                if !bundle.is_empty() && !allow_invalid_ca_bundle(old) {
                    causes.extend(validate_ca_bundle(bundle, &format!("{cc_path}.caBundle")));
                }
            }
        }
        let require_known = old.is_none_or(|o| {
            let listed = strings(o.pointer("/spec/conversion/webhook/conversionReviewVersions"));
            listed.is_empty() || listed.iter().any(|v| ACCEPTED.contains(&v.as_str()))
        });
        causes.extend(validate_review_versions(
            &versions,
            require_known,
            &versions_path,
        ));
    } else {
        if client.is_some() {
            causes.push(Cause::forbidden(
                cc_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !versions.is_empty() {
            causes.push(Cause::forbidden(
                versions_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    causes
}

/// `validateConversionReviewVersions`.
fn validate_review_versions(versions: &[String], require_known: bool, path: &str) -> Vec<Cause> {
    if versions.is_empty() {
        return vec![Cause::required(path)];
    }
    let mut causes = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            causes.push(Cause::invalid(
                format!("{path}[{i}]"),
                &json!(v),
                "duplicate version",
            ));
            continue;
        }
        for e in validation::is_dns1035_label(v) {
            causes.push(Cause::invalid(format!("{path}[{i}]"), &json!(v), &e));
        }
    }
    if require_known && !versions.iter().any(|v| ACCEPTED.contains(&v.as_str())) {
        causes.push(invalid_raw(
            path.to_string(),
            &go_strings(versions),
            "must include at least one of v1, v1beta1",
        ));
    }
    causes
}

/// `allowInvalidCABundle`: on create, before the CRD is established, and when the stored
/// bundle is itself invalid, any bundle is accepted.
fn allow_invalid_ca_bundle(old: Option<&Value>) -> bool {
    let Some(old) = old else { return true };
    if !super::is_established(old) {
        return true;
    }
    let bundle = old
        .pointer("/spec/conversion/webhook/clientConfig/caBundle")
        .and_then(Value::as_str)
        .unwrap_or("");
    !bundle.is_empty() && !validate_ca_bundle(bundle, "caBundle").is_empty()
}

/// `webhook.ValidateCABundle`: the bundle (base64 of PEM) holds at least one certificate.
/// Only PEM framing and the DER envelope are checked, not the certificate's contents.
fn validate_ca_bundle(bundle: &str, path: &str) -> Vec<Cause> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let pem = b64.decode(bundle).unwrap_or_default();
    if has_certificate(&String::from_utf8_lossy(&pem)) {
        return vec![];
    }
    let bytes: Vec<String> = pem.iter().map(|b| format!("0x{b:x}")).collect();
    vec![invalid_raw(
        path.to_string(),
        &Value::String(format!("[]byte{{{}}}", bytes.join(", "))),
        "unable to load root certificates: data does not contain any valid RSA or ECDSA certificates",
    )]
}

/// Whether `pem` has a `CERTIFICATE` block whose body is base64 of a DER sequence.
fn has_certificate(pem: &str) -> bool {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    pem.split(BEGIN).skip(1).any(|rest| {
        let Some((body, _)) = rest.split_once(END) else {
            return false;
        };
        let body: String = body.split_whitespace().collect();
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .is_ok_and(|der| der.first() == Some(&0x30))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn crd(conversion: Value) -> Value {
        json!({"spec": {"conversion": conversion}})
    }

    fn rendered(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::render).collect()
    }

    #[test]
    fn webhook_needs_a_client_config_and_review_versions() {
        let c = validate(&crd(json!({"strategy": "Webhook"})), None);
        assert_eq!(
            rendered(&c),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ]
        );
    }

    #[test]
    fn webhook_client_config_rules_are_the_admission_ones() {
        let c = validate(
            &crd(json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": "http://x/convert"},
                "conversionReviewVersions": ["v2", "v2"]}})),
            None,
        );
        assert_eq!(
            rendered(&c),
            [
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
                "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\", \"v2\"}: must include at least one of v1, v1beta1",
            ]
        );
        let both = validate(
            &crd(json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": "https://x", "service": {"namespace": "n", "name": "s", "port": 443}},
                "conversionReviewVersions": ["v1"]}})),
            None,
        );
        assert_eq!(
            rendered(&both),
            ["spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"]
        );
    }

    #[test]
    fn none_forbids_webhook_settings() {
        let c = validate(
            &crd(json!({"strategy": "None", "webhook": {
                "clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}})),
            None,
        );
        assert_eq!(
            rendered(&c),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
            ]
        );
        assert!(validate(&crd(json!({"strategy": "None"})), None).is_empty());
    }

    #[test]
    fn an_unknown_strategy_is_not_supported() {
        let c = validate(&crd(json!({"strategy": "Magic"})), None);
        assert_eq!(
            rendered(&c),
            ["spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""]
        );
    }

    #[test]
    fn ca_bundles_are_checked_only_on_updates_of_established_crds() {
        let bad = base64::engine::general_purpose::STANDARD.encode("ab");
        let new = crd(json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://x", "caBundle": bad},
            "conversionReviewVersions": ["v1"]}}));
        assert!(validate(&new, None).is_empty());
        let mut old = crd(json!({"strategy": "None"}));
        old["status"] = json!({"conditions": [{"type": "Established", "status": "True"}]});
        assert_eq!(
            rendered(&validate(&new, Some(&old))),
            ["spec.conversion.webhookClientConfig.caBundle: Invalid value: []byte{0x61, 0x62}: unable to load root certificates: data does not contain any valid RSA or ECDSA certificates"]
        );
        let der = base64::engine::general_purpose::STANDARD.encode([0x30, 0x03, 0x02, 0x01, 0x01]);
        let pem = format!("-----BEGIN CERTIFICATE-----\n{der}\n-----END CERTIFICATE-----\n");
        assert!(has_certificate(&pem));
        assert!(!has_certificate(
            "-----BEGIN CERTIFICATE-----\nzz\n-----END CERTIFICATE-----"
        ));
    }
}
