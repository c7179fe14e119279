//! The protobuf form of an OpenAPI v2 document that Go clients decode: the `openapi.v2`
//! messages of gnostic's `OpenAPIv2.proto` (the package client-go's
//! `discovery.OpenAPISchema` unmarshals), declared here with `prost` for the subset of fields
//! kplane's documents use, and [`compile`], which turns a Swagger 2.0 JSON document into
//! them as gnostic's compiler does (map entries keep the JSON order, extensions carry their
//! value as YAML text — kplane writes JSON, which is valid YAML).
//!
//! Field numbers follow the `.proto` file; fields kplane never sets are left out (a decoder
//! skips unknown fields, so the messages still decode documents that have them).

use serde_json::{Map, Value};

/// `openapi.v2.Document`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(string, tag = "3")]
    pub host: String,
    #[prost(string, tag = "4")]
    pub base_path: String,
    #[prost(string, repeated, tag = "5")]
    pub schemes: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub consumes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub produces: Vec<String>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    pub security_definitions: Option<SecurityDefinitions>,
    #[prost(message, repeated, tag = "16")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Info`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(message, repeated, tag = "7")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Any`: a value as YAML text (field 1, a `google.protobuf.Any`, is never set).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(string, tag = "2")]
    pub yaml: String,
}

/// `openapi.v2.NamedAny`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

/// `openapi.v2.Paths`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

/// `openapi.v2.NamedPathItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

/// `openapi.v2.PathItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PathItem {
    #[prost(string, tag = "1")]
    pub xref: String,
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "6")]
    pub options: Option<Operation>,
    #[prost(message, optional, tag = "7")]
    pub head: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Operation`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(string, tag = "2")]
    pub summary: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(bool, tag = "11")]
    pub deprecated: bool,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.ParametersItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ParametersItem {
    #[prost(oneof = "parameters_item::Oneof", tags = "1, 2")]
    pub oneof: Option<parameters_item::Oneof>,
}

pub mod parameters_item {
    /// Either an inline parameter or a reference.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Parameter(Box<super::Parameter>),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

/// `openapi.v2.JsonReference`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct JsonReference {
    #[prost(string, tag = "1")]
    pub xref: String,
    #[prost(string, tag = "2")]
    pub description: String,
}

/// `openapi.v2.Parameter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Parameter {
    #[prost(oneof = "parameter::Oneof", tags = "1, 2")]
    pub oneof: Option<parameter::Oneof>,
}

pub mod parameter {
    /// A body parameter or any other.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        BodyParameter(Box<super::BodyParameter>),
        #[prost(message, tag = "2")]
        NonBodyParameter(super::NonBodyParameter),
    }
}

/// `openapi.v2.BodyParameter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BodyParameter {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(bool, tag = "4")]
    pub required: bool,
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.NonBodyParameter` (kplane publishes query and path parameters only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NonBodyParameter {
    #[prost(oneof = "non_body_parameter::Oneof", tags = "3, 4")]
    pub oneof: Option<non_body_parameter::Oneof>,
}

pub mod non_body_parameter {
    /// Where the parameter goes.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "3")]
        QueryParameterSubSchema(super::SimpleParameter),
        #[prost(message, tag = "4")]
        PathParameterSubSchema(super::PathParameter),
    }
}

/// `openapi.v2.QueryParameterSubSchema` (fields 1-8 and 20 of it).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SimpleParameter {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(bool, tag = "5")]
    pub allow_empty_value: bool,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(string, tag = "7")]
    pub format: String,
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
    #[prost(message, repeated, tag = "23")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.PathParameterSubSchema` (its field numbers differ from the query one's).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PathParameter {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "5")]
    pub r#type: String,
    #[prost(string, tag = "6")]
    pub format: String,
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
    #[prost(message, repeated, tag = "22")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Responses`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
    #[prost(message, repeated, tag = "2")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.NamedResponseValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

/// `openapi.v2.ResponseValue` (always an inline response here).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseValue {
    #[prost(message, optional, tag = "1")]
    pub response: Option<Response>,
}

/// `openapi.v2.Response`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.SchemaItem` (always a schema here, never a file schema).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchemaItem {
    #[prost(message, optional, tag = "1")]
    pub schema: Option<Schema>,
}

/// `openapi.v2.Definitions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.Properties`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.NamedSchema`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

/// `openapi.v2.Schema`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub xref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(double, tag = "6")]
    pub multiple_of: f64,
    #[prost(double, tag = "7")]
    pub maximum: f64,
    #[prost(bool, tag = "8")]
    pub exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    pub minimum: f64,
    #[prost(bool, tag = "10")]
    pub exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    #[prost(string, tag = "13")]
    pub pattern: String,
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(int64, tag = "17")]
    pub max_properties: i64,
    #[prost(int64, tag = "18")]
    pub min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, tag = "21")]
    pub additional_properties: Option<AdditionalPropertiesItem>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.AdditionalPropertiesItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AdditionalPropertiesItem {
    #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
    pub oneof: Option<additional_properties_item::Oneof>,
}

pub mod additional_properties_item {
    /// A schema, or `true`/`false`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Schema(Box<super::Schema>),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

/// `openapi.v2.TypeItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

/// `openapi.v2.ItemsItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

/// `openapi.v2.SecurityRequirement`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedStringArray>,
}

/// `openapi.v2.NamedStringArray`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedStringArray {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<StringArray>,
}

/// `openapi.v2.StringArray`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

/// `openapi.v2.SecurityDefinitions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

/// `openapi.v2.NamedSecurityDefinitionsItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSecurityDefinitionsItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<SecurityDefinitionsItem>,
}

/// `openapi.v2.SecurityDefinitionsItem` (API-key schemes only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitionsItem {
    #[prost(message, optional, tag = "2")]
    pub api_key_security: Option<ApiKeySecurity>,
}

/// `openapi.v2.ApiKeySecurity`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub description: String,
}

// ---- JSON → messages ----

fn str_of(obj: &Map<String, Value>, key: &str) -> String {
    obj.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn bool_of(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn f64_of(obj: &Map<String, Value>, key: &str) -> f64 {
    obj.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn i64_of(obj: &Map<String, Value>, key: &str) -> i64 {
    obj.get(key)
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
        .unwrap_or(0)
}

fn strings_of(obj: &Map<String, Value>, key: &str) -> Vec<String> {
    match obj.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Entries of a JSON object in key order (whatever map `serde_json` was built with).
fn sorted(obj: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = obj.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    entries
}

fn any(value: &Value) -> Any {
    Any {
        yaml: crate::canonical::to_json(value)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default(),
    }
}

fn extensions(obj: &Map<String, Value>) -> Vec<NamedAny> {
    sorted(obj)
        .into_iter()
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, v)| NamedAny {
            name: k.clone(),
            value: Some(any(v)),
        })
        .collect()
}

fn empty() -> Map<String, Value> {
    Map::new()
}

/// Compiles a Swagger 2.0 JSON document (as [`super::build`] makes it) into its protobuf form.
pub fn compile(doc: &Value) -> Document {
    let binding = empty();
    let obj = doc.as_object().unwrap_or(&binding);
    let info = obj.get("info").and_then(Value::as_object).map(|i| Info {
        title: str_of(i, "title"),
        version: str_of(i, "version"),
        description: str_of(i, "description"),
        vendor_extension: extensions(i),
    });
    let paths = obj.get("paths").and_then(Value::as_object).map(|p| Paths {
        vendor_extension: extensions(p),
        path: sorted(p)
            .into_iter()
            .filter(|(k, _)| k.starts_with('/'))
            .map(|(name, item)| NamedPathItem {
                name: name.clone(),
                value: Some(path_item(item)),
            })
            .collect(),
    });
    let definitions = obj
        .get("definitions")
        .and_then(Value::as_object)
        .map(|d| Definitions {
            additional_properties: named_schemas(d),
        });
    let security = match obj.get("security") {
        Some(Value::Array(reqs)) => reqs
            .iter()
            .filter_map(Value::as_object)
            .map(|req| SecurityRequirement {
                additional_properties: sorted(req)
                    .into_iter()
                    .map(|(name, scopes)| NamedStringArray {
                        name: name.clone(),
                        value: Some(StringArray {
                            value: scopes
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect(),
                        }),
                    })
                    .collect(),
            })
            .collect(),
        _ => Vec::new(),
    };
    let security_definitions = obj
        .get("securityDefinitions")
        .and_then(Value::as_object)
        .map(|defs| SecurityDefinitions {
            additional_properties: sorted(defs)
                .into_iter()
                .map(|(name, def)| {
                    let d = def.as_object().unwrap_or(&binding);
                    NamedSecurityDefinitionsItem {
                        name: name.clone(),
                        value: Some(SecurityDefinitionsItem {
                            api_key_security: Some(ApiKeySecurity {
                                r#type: str_of(d, "type"),
                                name: str_of(d, "name"),
                                r#in: str_of(d, "in"),
                                description: str_of(d, "description"),
                            }),
                        }),
                    }
                })
                .collect(),
        });
    Document {
        swagger: str_of(obj, "swagger"),
        info,
        host: str_of(obj, "host"),
        base_path: str_of(obj, "basePath"),
        schemes: strings_of(obj, "schemes"),
        consumes: strings_of(obj, "consumes"),
        produces: strings_of(obj, "produces"),
        paths,
        definitions,
        security,
        security_definitions,
        vendor_extension: extensions(obj),
    }
}

fn named_schemas(obj: &Map<String, Value>) -> Vec<NamedSchema> {
    sorted(obj)
        .into_iter()
        .map(|(name, s)| NamedSchema {
            name: name.clone(),
            value: Some(schema(s)),
        })
        .collect()
}

fn path_item(item: &Value) -> PathItem {
    let binding = empty();
    let obj = item.as_object().unwrap_or(&binding);
    let op = |method: &str| obj.get(method).map(operation);
    PathItem {
        xref: str_of(obj, "$ref"),
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        options: op("options"),
        head: op("head"),
        patch: op("patch"),
        parameters: parameters(obj),
        vendor_extension: extensions(obj),
    }
}

fn parameters(obj: &Map<String, Value>) -> Vec<ParametersItem> {
    obj.get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|p| {
            let param = match p.get("in").and_then(Value::as_str) {
                Some("body") => parameter::Oneof::BodyParameter(Box::new(BodyParameter {
                    description: str_of(p, "description"),
                    name: str_of(p, "name"),
                    r#in: str_of(p, "in"),
                    required: bool_of(p, "required"),
                    schema: p.get("schema").map(schema),
                    vendor_extension: extensions(p),
                })),
                Some("path") => parameter::Oneof::NonBodyParameter(NonBodyParameter {
                    oneof: Some(non_body_parameter::Oneof::PathParameterSubSchema(
                        PathParameter {
                            required: bool_of(p, "required"),
                            r#in: str_of(p, "in"),
                            description: str_of(p, "description"),
                            name: str_of(p, "name"),
                            r#type: str_of(p, "type"),
                            format: str_of(p, "format"),
                            unique_items: bool_of(p, "uniqueItems"),
                            vendor_extension: extensions(p),
                        },
                    )),
                }),
                _ => parameter::Oneof::NonBodyParameter(NonBodyParameter {
                    oneof: Some(non_body_parameter::Oneof::QueryParameterSubSchema(
                        SimpleParameter {
                            required: bool_of(p, "required"),
                            r#in: str_of(p, "in"),
                            description: str_of(p, "description"),
                            name: str_of(p, "name"),
                            allow_empty_value: bool_of(p, "allowEmptyValue"),
                            r#type: str_of(p, "type"),
                            format: str_of(p, "format"),
                            unique_items: bool_of(p, "uniqueItems"),
                            vendor_extension: extensions(p),
                        },
                    )),
                }),
            };
            ParametersItem {
                oneof: Some(parameters_item::Oneof::Parameter(Box::new(Parameter {
                    oneof: Some(param),
                }))),
            }
        })
        .collect()
}

fn operation(op: &Value) -> Operation {
    let binding = empty();
    let obj = op.as_object().unwrap_or(&binding);
    let responses = obj
        .get("responses")
        .and_then(Value::as_object)
        .map(|r| Responses {
            response_code: sorted(r)
                .into_iter()
                .filter(|(k, _)| !k.starts_with("x-"))
                .map(|(code, resp)| {
                    let resp = resp.as_object().unwrap_or(&binding);
                    NamedResponseValue {
                        name: code.clone(),
                        value: Some(ResponseValue {
                            response: Some(Response {
                                description: str_of(resp, "description"),
                                schema: resp.get("schema").map(|s| SchemaItem {
                                    schema: Some(schema(s)),
                                }),
                                vendor_extension: extensions(resp),
                            }),
                        }),
                    }
                })
                .collect(),
            vendor_extension: extensions(r),
        });
    Operation {
        tags: strings_of(obj, "tags"),
        summary: str_of(obj, "summary"),
        description: str_of(obj, "description"),
        operation_id: str_of(obj, "operationId"),
        produces: strings_of(obj, "produces"),
        consumes: strings_of(obj, "consumes"),
        parameters: parameters(obj),
        responses,
        schemes: strings_of(obj, "schemes"),
        deprecated: bool_of(obj, "deprecated"),
        vendor_extension: extensions(obj),
    }
}

/// A Swagger 2.0 schema object as gnostic compiles it.
pub(crate) fn schema(value: &Value) -> Schema {
    let binding = empty();
    let obj = value.as_object().unwrap_or(&binding);
    let additional_properties = match obj.get("additionalProperties") {
        Some(Value::Bool(b)) => Some(AdditionalPropertiesItem {
            oneof: Some(additional_properties_item::Oneof::Boolean(*b)),
        }),
        Some(s @ Value::Object(_)) => Some(AdditionalPropertiesItem {
            oneof: Some(additional_properties_item::Oneof::Schema(Box::new(schema(
                s,
            )))),
        }),
        _ => None,
    };
    let items = match obj.get("items") {
        Some(Value::Array(list)) => Some(ItemsItem {
            schema: list.iter().map(schema).collect(),
        }),
        Some(s @ Value::Object(_)) => Some(ItemsItem {
            schema: vec![schema(s)],
        }),
        _ => None,
    };
    let r#type = obj.get("type").map(|_| TypeItem {
        value: strings_of(obj, "type"),
    });
    Schema {
        xref: str_of(obj, "$ref"),
        format: str_of(obj, "format"),
        title: str_of(obj, "title"),
        description: str_of(obj, "description"),
        default: obj.get("default").map(any),
        multiple_of: f64_of(obj, "multipleOf"),
        maximum: f64_of(obj, "maximum"),
        exclusive_maximum: bool_of(obj, "exclusiveMaximum"),
        minimum: f64_of(obj, "minimum"),
        exclusive_minimum: bool_of(obj, "exclusiveMinimum"),
        max_length: i64_of(obj, "maxLength"),
        min_length: i64_of(obj, "minLength"),
        pattern: str_of(obj, "pattern"),
        max_items: i64_of(obj, "maxItems"),
        min_items: i64_of(obj, "minItems"),
        unique_items: bool_of(obj, "uniqueItems"),
        max_properties: i64_of(obj, "maxProperties"),
        min_properties: i64_of(obj, "minProperties"),
        required: strings_of(obj, "required"),
        r#enum: obj
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(any)
            .collect(),
        additional_properties,
        r#type,
        items,
        all_of: obj
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(schema)
            .collect(),
        properties: obj
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| Properties {
                additional_properties: named_schemas(p),
            }),
        read_only: bool_of(obj, "readOnly"),
        example: obj.get("example").map(any),
        vendor_extension: extensions(obj),
    }
}
