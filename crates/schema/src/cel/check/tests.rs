//! The estimator against kube-apiserver's own expectations: every case of apiextensions'
//! `TestCostEstimation` (pkg/apiserver/schema/cel/compilation_test.go, Kubernetes 1.32),
//! with the schema it generates written as JSON, the rule, and the `MaxCost` upstream
//! asserts with no size limits set ("calc") and with `maxItems`/`maxProperties`/
//! `maxLength` set to the case's number ("set"). `None` where upstream asserts nothing
//! but that the cost exceeds the CRD limit.

use serde_json::{json, Value};

use super::analyze;
use crate::build::Builder;
use crate::cel::compile::parse;
use crate::options::CompileOptions;
use crate::walk::Walk;

/// The estimated cost of `rule` on a (non-resource-root) node of `schema`.
fn cost(schema: &Value, rule: &str) -> u64 {
    let opts = CompileOptions::default();
    let node = Builder::new(&opts).node(schema, &Walk::root("test"));
    let expr = parse(rule).unwrap_or_else(|e| panic!("{rule}: {e}"));
    match analyze(&expr, &node, false, false) {
        Ok(a) => a.cost,
        Err(e) => panic!("{rule}: {e}"),
    }
}

/// Sets `key` to `max` when given.
fn limit(mut v: Value, key: &str, max: Option<i64>) -> Value {
    if let Some(m) = max {
        v[key] = json!(m);
    }
    v
}

/// A schema type name as the upstream generators take it.
fn scalar(t: &str) -> Value {
    match t {
        "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
        "duration" | "date" | "date-time" => json!({"type": "string", "format": t}),
        _ => json!({"type": t}),
    }
}

fn array_of(t: &str) -> impl Fn(Option<i64>) -> Value + '_ {
    move |m| limit(json!({"type": "array", "items": scalar(t)}), "maxItems", m)
}

fn map_of(item: Value) -> impl Fn(Option<i64>) -> Value {
    move |m| {
        let v = json!({"type": "object", "additionalProperties": item.clone()});
        limit(v, "maxProperties", m)
    }
}

fn string_with(extra: Value) -> impl Fn(Option<i64>) -> Value {
    move |m| {
        let mut v = json!({"type": "string"});
        if let (Value::Object(o), Value::Object(e)) = (&mut v, &extra) {
            o.extend(e.clone());
        }
        limit(v, "maxLength", m)
    }
}

fn required_object() -> Value {
    json!({"type": "object", "required": ["required"],
        "properties": {"required": {"type": "string"}, "optional": {"type": "string"}}})
}

/// One case: name, schema generator (given the limit or none), rule, the cost without
/// limits (`None`: over the CRD limit), the limit, the cost with it.
type Case<'a> = (
    &'static str,
    Gen<'a>,
    &'static str,
    Option<u64>,
    i64,
    Option<u64>,
);
type Gen<'a> = Box<dyn Fn(Option<i64>) -> Value + 'a>;

#[test]
fn kube_apiserver_cost_estimation_table() {
    let obj_array = |m| {
        limit(
            json!({"type": "array", "items": required_object()}),
            "maxItems",
            m,
        )
    };
    let arrays_of_numbers = |m| {
        let v = json!({"type": "array", "items": {"type": "array", "items": {"type": "number"}}});
        limit(v, "maxItems", m)
    };
    let maps_array = |m| {
        let v = json!({"type": "array", "items": {"type": "object", "additionalProperties": {"type": "number"}}});
        limit(v, "maxItems", m)
    };
    let nested = |m: Option<i64>| {
        let v = json!({"type": "object", "additionalProperties": limit(json!({"type": "string"}), "maxLength", m)});
        limit(v, "maxProperties", m)
    };
    let all_max = |m: Option<i64>| {
        let inner = limit(required_object(), "maxProperties", m);
        let items = limit(
            json!({"type": "object", "additionalProperties": inner}),
            "maxProperties",
            m,
        );
        limit(json!({"type": "array", "items": items}), "maxItems", m)
    };
    let one_max = |m: Option<i64>| {
        let items = limit(
            json!({"type": "object", "additionalProperties": required_object()}),
            "maxProperties",
            m,
        );
        json!({"type": "array", "items": items})
    };
    let strings = |m: Option<i64>| {
        let s = limit(json!({"type": "string"}), "maxLength", m);
        limit(json!({"type": "array", "items": s}), "maxItems", m)
    };
    let replace = |m: Option<i64>| {
        json!({"type": "object", "properties": {
            "str": limit(json!({"type": "string"}), "maxLength", m),
            "before": {"type": "string", "maxLength": 2},
            "after": {"type": "string", "maxLength": 4}}})
    };
    let split = |m: Option<i64>| {
        let s = limit(json!({"type": "string"}), "maxLength", m);
        json!({"type": "object", "properties": {"str": s.clone(), "separator": s}})
    };
    let cases: Vec<Case<'_>> = vec![
        (
            "number array with all",
            Box::new(array_of("number")),
            "self.all(x, true)",
            Some(4718591),
            10,
            Some(32),
        ),
        (
            "string array with all",
            Box::new(array_of("string")),
            "self.all(x, true)",
            Some(3145727),
            20,
            Some(62),
        ),
        (
            "boolean array with all",
            Box::new(array_of("boolean")),
            "self.all(x, true)",
            Some(1887437),
            5,
            Some(17),
        ),
        (
            "array of number arrays with all",
            Box::new(arrays_of_numbers),
            "self.all(x, true)",
            Some(3145727),
            100,
            Some(302),
        ),
        (
            "array of objects with all",
            Box::new(obj_array),
            "self.all(x, true)",
            Some(555128),
            50,
            Some(152),
        ),
        (
            "map of numbers with all",
            Box::new(map_of(json!({"type": "number"}))),
            "self.all(x, true)",
            Some(1348169),
            10,
            Some(32),
        ),
        (
            "map of strings with all",
            Box::new(map_of(json!({"type": "string"}))),
            "self.all(x, true)",
            Some(1179647),
            3,
            Some(11),
        ),
        (
            "map of booleans with all",
            Box::new(map_of(json!({"type": "boolean"}))),
            "self.all(x, true)",
            Some(943718),
            100,
            Some(302),
        ),
        (
            "string with contains",
            Box::new(string_with(json!({}))),
            "self.contains('test')",
            Some(314574),
            10,
            Some(5),
        ),
        (
            "string with startsWith",
            Box::new(string_with(json!({}))),
            "self.startsWith('test')",
            Some(2),
            15,
            Some(2),
        ),
        (
            "string with endsWith",
            Box::new(string_with(json!({}))),
            "self.endsWith('test')",
            Some(2),
            30,
            Some(2),
        ),
        (
            "concat string",
            Box::new(string_with(json!({}))),
            r#"size(self + "hello") > size("hello")"#,
            Some(314578),
            4,
            Some(7),
        ),
        (
            "index of array with numbers",
            Box::new(array_of("number")),
            "self[1] == 0.0",
            Some(2),
            5000,
            Some(2),
        ),
        (
            "index of array with strings",
            Box::new(array_of("string")),
            "self[1] == self[1]",
            Some(314577),
            8,
            Some(314577),
        ),
        (
            "O(n^2) loop with numbers",
            Box::new(array_of("number")),
            "self.all(x, self.all(y, true))",
            None,
            10,
            Some(352),
        ),
        (
            "O(n^3) loop with numbers",
            Box::new(array_of("number")),
            "self.all(x, self.all(y, self.all(z, true)))",
            None,
            10,
            Some(3552),
        ),
        (
            "regex matches simple",
            Box::new(string_with(json!({}))),
            r#"self.matches("x")"#,
            Some(314574),
            50,
            Some(22),
        ),
        (
            "regex matches empty string",
            Box::new(string_with(json!({}))),
            r#""".matches("(((((((((())))))))))[0-9]")"#,
            Some(7),
            10,
            Some(7),
        ),
        (
            "regex matches empty regex",
            Box::new(string_with(json!({}))),
            r#"self.matches("")"#,
            Some(1),
            100,
            Some(1),
        ),
        (
            "map of strings with value length",
            Box::new(nested),
            "self.all(x, x.contains(self[x]))",
            Some(2752507),
            10,
            Some(72),
        ),
        (
            "set array maxLength to zero",
            Box::new(array_of("number")),
            "self[3] == 0.0",
            Some(2),
            0,
            Some(2),
        ),
        (
            "set map maxLength to zero",
            Box::new(map_of(json!({"type": "number"}))),
            r#"self["x"] == 0.0"#,
            Some(2),
            0,
            Some(2),
        ),
        (
            "set string maxLength to zero",
            Box::new(string_with(json!({}))),
            r#"self == "x""#,
            Some(2),
            0,
            Some(1),
        ),
        (
            "set bytes maxLength to zero",
            Box::new(string_with(json!({"format": "byte"}))),
            r#"self == b"x""#,
            Some(2),
            0,
            Some(1),
        ),
        (
            "set maxLength greater than estimated maxLength",
            Box::new(array_of("number")),
            "self.all(x, x == 0.0)",
            Some(6291454),
            3 * 1024 * 2048,
            Some(25165826),
        ),
        (
            "nested types with root rule with all supporting maxLength",
            Box::new(all_max),
            r#"self.all(x, x["y"].required == "z")"#,
            Some(7340027),
            10,
            Some(72),
        ),
        (
            "nested types with root rule with one supporting maxLength",
            Box::new(one_max),
            r#"self.all(x, x["y"].required == "z")"#,
            Some(7340027),
            10,
            Some(7340027),
        ),
        (
            "int-or-string array with all",
            Box::new(array_of("int-or-string")),
            "self.all(x, true)",
            Some(4718591),
            10,
            Some(32),
        ),
        (
            "index of array with int-or-strings",
            Box::new(array_of("int-or-string")),
            "self[0] == 5",
            Some(3),
            10,
            Some(3),
        ),
        (
            "index of array with booleans",
            Box::new(array_of("boolean")),
            "self[0] == false",
            Some(2),
            25,
            Some(2),
        ),
        (
            "index of array of objects",
            Box::new(obj_array),
            "self[0] == null",
            Some(2),
            422,
            Some(2),
        ),
        (
            "index of array of array of numbers",
            Box::new(arrays_of_numbers),
            "self[0][0] == -1.0",
            Some(3),
            51,
            Some(3),
        ),
        (
            "array of number maps with all",
            Box::new(maps_array),
            "self.all(x, x.y == 25.2)",
            Some(6291452),
            12,
            Some(74),
        ),
        (
            "index of array of number maps",
            Box::new(maps_array),
            "self[0].x > 2.0",
            Some(4),
            3000,
            Some(4),
        ),
        (
            "duration array with all",
            Box::new(array_of("duration")),
            "self.all(x, true)",
            Some(2359295),
            5,
            Some(17),
        ),
        (
            "index of duration array",
            Box::new(array_of("duration")),
            "self[0].getHours() == 2",
            Some(4),
            525,
            Some(4),
        ),
        (
            "date array with all",
            Box::new(array_of("date")),
            "self.all(x, true)",
            Some(725936),
            15,
            Some(47),
        ),
        (
            "index of date array",
            Box::new(array_of("date")),
            "self[2].getDayOfMonth() == 13",
            Some(4),
            42,
            Some(4),
        ),
        (
            "date-time array with all",
            Box::new(array_of("date-time")),
            "self.all(x, true)",
            Some(428963),
            25,
            Some(77),
        ),
        (
            "index of date-time array",
            Box::new(array_of("date-time")),
            "self[2].getMinutes() == 45",
            Some(4),
            99,
            Some(4),
        ),
        (
            "map of int-or-strings with all",
            Box::new(map_of(scalar("int-or-string"))),
            "self.all(x, true)",
            Some(1348169),
            15,
            Some(47),
        ),
        (
            "map of objects with all",
            Box::new(map_of(required_object())),
            "self.all(x, true)",
            Some(428963),
            20,
            Some(62),
        ),
        (
            "map of number maps with all",
            Box::new(map_of(
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
            )),
            "self.all(x, true)",
            Some(1179647),
            10,
            Some(32),
        ),
        (
            "map of number arrays with all",
            Box::new(map_of(
                json!({"type": "array", "items": {"type": "number"}}),
            )),
            "self.all(x, true)",
            Some(1179647),
            25,
            Some(77),
        ),
        (
            "map of durations with all",
            Box::new(map_of(scalar("duration"))),
            "self.all(x, true)",
            Some(1048577),
            5,
            Some(17),
        ),
        (
            "map of dates with all",
            Box::new(map_of(scalar("date"))),
            "self.all(x, true)",
            Some(524288),
            10,
            Some(32),
        ),
        (
            "map of date-times with all",
            Box::new(map_of(scalar("date-time"))),
            "self.all(x, true)",
            Some(349526),
            25,
            Some(77),
        ),
        (
            "extended library regex find",
            Box::new(string_with(json!({}))),
            "self.find('[0-9]+') == ''",
            Some(629147),
            10,
            Some(11),
        ),
        (
            "extended library join",
            Box::new(strings),
            "self.join(' ') == 'aa bb'",
            Some(329853068905),
            10,
            Some(43),
        ),
        (
            "extended library isSorted",
            Box::new(strings),
            "self.isSorted() == true",
            Some(329854432052),
            10,
            Some(52),
        ),
        (
            "extended library replace",
            Box::new(replace),
            "self.str.replace(self.before, self.after) == 'does not matter'",
            Some(629154),
            4,
            Some(12),
        ),
        (
            "extended library split",
            Box::new(split),
            "self.str.split(self.separator) == []",
            Some(629160),
            10,
            Some(22),
        ),
        (
            "extended library lowerAscii",
            Box::new(string_with(json!({}))),
            "self.lowerAscii() == 'lower!'",
            Some(314575),
            10,
            Some(6),
        ),
        (
            "check cost of size call",
            Box::new(map_of(json!({"type": "integer"}))),
            "oldSelf.size() == self.size()",
            Some(5),
            10,
            Some(5),
        ),
        (
            "check cost of timestamp comparison",
            Box::new(map_of(scalar("date-time"))),
            r#"self["a"] == self["b"]"#,
            Some(8),
            7,
            Some(8),
        ),
        (
            "check cost of duration comparison",
            Box::new(map_of(scalar("duration"))),
            r#"self["c"] == self["d"]"#,
            Some(8),
            42,
            Some(8),
        ),
        (
            "enums with maxLength equals to the longest possible value",
            Box::new(string_with(json!({"enum": ["A", "B", "C", "LongValue"]}))),
            "self.contains('A')",
            Some(2),
            1000,
            Some(401),
        ),
    ];
    let mut wrong = Vec::new();
    for (name, schema, rule, calc, max, set) in &cases {
        let got = cost(&schema(None), rule);
        match calc {
            Some(want) if got != *want => wrong.push(format!("{name} (calc): {got}, want {want}")),
            None if got <= 100_000_000 => {
                wrong.push(format!("{name} (calc): {got}, want > 100000000"))
            }
            _ => {}
        }
        let got = cost(&schema(Some(*max)), rule);
        if let Some(want) = set {
            if got != *want {
                wrong.push(format!("{name} (set {max}): {got}, want {want}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The cases of the Kubernetes library's cost tests (apiserver pkg/cel/library/
/// cost_test.go, 1.32) whose sizes come from literals alone (the others read sizes from
/// that test's own size estimator): the expression and upstream's estimated `Max`.
#[test]
fn kube_apiserver_library_cost_table() {
    let url = "url('https:://kubernetes.io/')";
    let (ip4, ip6) = (
        "ip('192.168.0.1')",
        "ip('2001:db8:3333:4444:5555:6666:7777:8888')",
    );
    let (cidr4, cidr6) = ("cidr('192.168.0.0/16')", "cidr('2001:db8::/32')");
    let mut cases: Vec<(String, u64)> = Vec::new();
    for op in [
        ".getScheme()",
        ".getHostname()",
        ".getHost()",
        ".getPort()",
        ".getEscapedPath()",
        ".getQuery()",
    ] {
        cases.push((format!("{url}{op}"), 4));
    }
    cases.push((format!("{url} == url('https:://kubernetes.io/')"), 9));
    cases.push((format!("{url} == url('http://x.b')"), 5));
    for (ip, base) in [(ip4, 2), (ip6, 4)] {
        cases.push((ip.to_string(), base));
        for op in [
            ".family()",
            ".isUnspecified()",
            ".isLoopback()",
            ".isLinkLocalMulticast()",
            ".isLinkLocalUnicast()",
            ".isGlobalUnicast()",
        ] {
            cases.push((format!("{ip}{op}"), base + 1));
        }
        cases.push((format!("{ip} == ip('192.168.0.1')"), base + 3));
    }
    cases.push(("ip.isCanonical('192.168.0.1')".into(), 3));
    cases.push((
        "ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')".into(),
        8,
    ));
    cases.push(("ip.isCanonical('2001:db8::abcd')".into(), 3));
    for cidr in [cidr4, cidr6] {
        cases.push((cidr.to_string(), 2));
        for op in [".ip()", ".prefixLength()", ".masked()"] {
            cases.push((format!("{cidr}{op}"), 3));
        }
        cases.push((format!("{cidr} == cidr('2001:db8::/32')"), 5));
    }
    for op in [
        ".containsCIDR(cidr('192.0.0.0/30'))",
        ".containsCIDR(cidr('192.168.0.0/16'))",
        ".containsCIDR('192.0.0.0/30')",
        ".containsCIDR('192.168.0.0/16')",
    ] {
        cases.push((format!("{cidr4}{op}"), 11));
    }
    for (op, max) in [
        (".containsIP(ip('192.0.0.1'))", 7),
        (".containsIP(ip('192.169.0.1'))", 8),
        (".containsIP(ip('192.169.169.250'))", 8),
        (".containsIP('192.0.0.1')", 7),
        (".containsIP('192.169.0.1')", 8),
    ] {
        cases.push((format!("{cidr4}{op}"), max));
    }
    for op in [
        ".containsCIDR(cidr('2001:db8::/126'))",
        ".containsCIDR(cidr('2001:db8::/32'))",
        ".containsCIDR('2001:db8::/126')",
        ".containsCIDR('2001:db8::/32')",
    ] {
        cases.push((format!("{cidr6}{op}"), 11));
    }
    for (op, max) in [
        (
            ".containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))",
            10,
        ),
        (".containsIP(ip('2001:db8::1'))", 8),
        (".containsIP('2001:db8:3333:4444:5555:6666:7777:8888')", 10),
        (".containsIP('2001:db8::1')", 8),
    ] {
        cases.push((format!("{cidr6}{op}"), max));
    }
    let fixed: &[(&str, u64)] = &[
        ("'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3),
        (
            "'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()",
            9,
        ),
        ("'ABCDEFGHIJ abcdefghij'.upperAscii()", 3),
        (
            "'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()",
            9,
        ),
        ("strings.quote('ABCDEFGHIJ abcdefghij')", 3),
        (
            "strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')",
            11,
        ),
        ("'abc 123 def 123'.replace('123', '456')", 3),
        ("'abc 123 def 123'.replace('', 'x')", 3),
        ("'abc 123 def 123'.replace('123', '')", 3),
        ("'abc 123 def 123'.replace('123', '456', 1)", 3),
        ("'abc 123 def 123'.split(' ')", 3),
        ("'abc 123 def 123'.split(' ', 1)", 3),
        ("'abc 123 def 123'.substring(5)", 2),
        ("'abc 123 def 123'.substring(5, 8)", 2),
        ("'  abc 123 def 123  '.trim()", 2),
        ("'abc 123 def 123'.find('123')", 2),
        ("'abc 123 def 123'.findAll('123')", 2),
        ("'abc 123 def 123'.findAll('123', 1)", 2),
        ("jsonpatch.escapeKey('abc/def~ abc/def~')", 2),
        (r#"quantity("12Mi")"#, 1),
        (r#"isQuantity("20")"#, 1),
        (r#"isQuantity("20M")"#, 1),
        (r#"quantity("200M") == quantity("200M")"#, 3),
        (
            r#"quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")"#,
            6,
        ),
        (
            r#"quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")"#,
            9,
        ),
        (r#"quantity("50M").isLessThan(quantity("50Mi"))"#, 3),
        (r#"quantity("50Mi").isGreaterThan(quantity("50M"))"#, 3),
        (r#"quantity("200M").compareTo(quantity("0.2G")) > 0"#, 4),
        (
            r#"quantity("50k").add(quantity("20")) == quantity("50.02k")"#,
            5,
        ),
        (
            r#"quantity("50k").sub(quantity("20")) == quantity("49.98k")"#,
            5,
        ),
        (r#"quantity("50k").sub(20) == quantity("49980")"#, 4),
        (
            r#"quantity("50k").add(20).sub(quantity("100k")).asInteger() > 0"#,
            6,
        ),
        (
            r#"quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() > 0"#,
            7,
        ),
        (r#"quantity("50k").asInteger() > 0"#, 3),
        (r#"quantity("50").isInteger()"#, 2),
        (r#"quantity("50.703k").asApproximateFloat() > 0.0"#, 3),
        (r#"format.named("dns1123subdomain")"#, 1),
        (
            r#"format.named("dns1123Subdomain").value().validate("my-name")"#,
            34,
        ),
        (
            r#"format.named("dns1123Label").value().validate("my-name")"#,
            34,
        ),
        (
            r#"format.named("dns1123Label").value() == format.named("dns1123Label").value()"#,
            11,
        ),
        ("sets.contains([], [])", 21),
        ("sets.contains([1], [])", 21),
        ("sets.contains([1], [1])", 22),
        ("sets.contains([1], [1, 1])", 23),
        ("sets.contains([1, 1], [1])", 23),
        ("sets.contains([2, 1], [1])", 23),
        ("sets.contains([1, 2, 3, 4], [2, 3])", 29),
        ("sets.contains([1], [1.0, 1])", 23),
        ("sets.contains([1, 2], [2u, 2.0])", 25),
        ("sets.contains([1, 2u], [2, 2.0])", 25),
        ("sets.contains([1, 2.0, 3u], [1.0, 2u, 3])", 30),
        ("sets.contains([[1], [2, 3]], [[2, 3.0]])", 53),
        ("!sets.contains([1], [2])", 23),
        ("!sets.contains([1], [1, 2])", 24),
        (r#"!sets.contains([1], ["1", 1])"#, 24),
        ("!sets.contains([1], [1.1, 1u])", 24),
        ("sets.equivalent([], [])", 21),
        ("sets.equivalent([1], [1])", 23),
        ("sets.equivalent([1], [1, 1])", 25),
        ("sets.equivalent([1, 1], [1])", 25),
        ("sets.equivalent([1], [1u, 1.0])", 25),
        ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", 39),
        ("sets.equivalent([[1.0], [2, 3]], [[1], [2, 3.0]])", 69),
        ("!sets.equivalent([2, 1], [1])", 26),
        ("!sets.equivalent([1], [1, 2])", 26),
        ("!sets.equivalent([1, 2], [2u, 2, 2.0])", 34),
        ("!sets.equivalent([1, 2], [1u, 2, 2.3])", 34),
        ("sets.intersects([1], [1])", 22),
        ("sets.intersects([1], [1, 1])", 23),
        ("sets.intersects([1, 1], [1])", 23),
        ("sets.intersects([2, 1], [1])", 23),
        ("sets.intersects([1], [1, 2])", 23),
        ("sets.intersects([1], [1.0, 2])", 23),
        ("sets.intersects([1, 2], [2u, 2, 2.0])", 27),
        ("sets.intersects([1, 2], [1u, 2, 2.3])", 27),
        ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", 65),
        ("!sets.intersects([], [])", 22),
        ("!sets.intersects([1], [])", 22),
        ("!sets.intersects([1], [2])", 23),
        (r#"!sets.intersects([1], ["1", 2])"#, 24),
        ("!sets.intersects([1], [1.1, 2u])", 24),
    ];
    cases.extend(fixed.iter().map(|(e, m)| (e.to_string(), *m)));
    let node = json!({"type": "object"});
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(expr, want)| {
            let got = cost(&node, expr);
            (got != *want).then(|| format!("{expr}: {got}, want {want}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn shared_paths_alias_as_in_go() {
    // items with `s` (maxLength 1: 4 bytes) and `t` (maxLength 100: 400 bytes)
    let items = json!({"type": "object", "properties": {
        "s": {"type": "string", "maxLength": 1}, "t": {"type": "string", "maxLength": 100}}});
    let list = json!({"type": "array", "maxItems": 10, "items": items});
    // `self.d`: the range's path [self d] is a full Go slice, so each `x` gets its own
    // copy: x.s == x.t costs 2 + 2 + ceil(0.1 * min(4, 400)) = 5, `@r && ...` 6, the loop
    // condition 2: self.d 2 + result 1 + 10 * 8 = 83
    let shallow = json!({"type": "object", "properties": {"d": list.clone()}});
    assert_eq!(cost(&shallow, "self.d.all(x, x.s == x.t)"), 83);
    // `self.a.b.c.d`: the range's path has 5 elements in a slice of capacity 8, so both
    // `x` paths share it and `x.t` overwrites `x.s`'s last element before the comparison
    // reads the sizes: ceil(0.1 * min(400, 400)) = 40, `x.s == x.t` 44, `@r && ...` 45:
    // the range 5 + result 1 + 10 * (45 + 2) = 476, kube-apiserver's figure too
    let deep = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "object", "properties": {"c": {"type": "object", "properties": {"d": list}}}}}}}});
    assert_eq!(cost(&deep, "self.a.b.c.d.all(x, x.s == x.t)"), 476);
}

/// The `authorizer` library is in every environment upstream (its functions at least;
/// `authorizer` itself only in admission's): its estimates are `library.CostEstimator`'s.
#[test]
fn authz_library_estimates() {
    let untyped = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    // self 1, .a 1, check 350,000, allowed 1
    assert_eq!(cost(&untyped, "self.a.check('get').allowed()"), 350_003);
    // a selector of 7 characters: 10 + ceil(0.7) + 50 * ceil(3.5)
    assert_eq!(
        cost(
            &untyped,
            "self.a.labelSelector('app=web').check('list').allowed()"
        ),
        350_003 + 211
    );
    let node = Builder::new(&CompileOptions::default())
        .node(&json!({"type": "string"}), &Walk::root("test"));
    let expr = parse("self.check('get').allowed()").unwrap();
    let err = analyze(&expr, &node, false, false).err().unwrap();
    assert_eq!(
        err,
        "found no matching overload for 'check' applied to 'string.(string)'"
    );
}
