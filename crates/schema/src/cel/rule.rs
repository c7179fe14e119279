//! The compiled form of one `x-kubernetes-validations` entry: [`CelRule`] with its
//! [`Reason`] and, once compiled, its [`Program`]; how compile errors quote the entry.

use kube_cel::cel::IdedExpr;

/// `reason` of a validation rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

impl Reason {
    pub(crate) fn parse(s: &str) -> Option<Reason> {
        Some(match s {
            "FieldValueInvalid" => Reason::Invalid,
            "FieldValueForbidden" => Reason::Forbidden,
            "FieldValueRequired" => Reason::Required,
            "FieldValueDuplicate" => Reason::Duplicate,
            _ => return None,
        })
    }

    fn go_name(self) -> &'static str {
        match self {
            Reason::Invalid => "FieldValueInvalid",
            Reason::Forbidden => "FieldValueForbidden",
            Reason::Required => "FieldValueRequired",
            Reason::Duplicate => "FieldValueDuplicate",
        }
    }
}

/// A compiled expression.
#[derive(Debug)]
pub(crate) struct Program {
    pub expr: IdedExpr,
    pub message_expr: Option<IdedExpr>,
    pub uses_old_self: bool,
    /// Number of AST nodes of the rule and of its `messageExpression` (memory estimate).
    pub nodes: u64,
    pub message_nodes: u64,
}

/// One `x-kubernetes-validations` entry.
#[derive(Debug)]
pub(crate) struct CelRule {
    pub rule: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    pub reason: Option<Reason>,
    /// The normalized `fieldPath`, appended to the error path.
    pub field_path: Option<String>,
    pub optional_old_self: Option<bool>,
    /// The ancestor below which `oldSelf` cannot be correlated (compile-time check only).
    pub uncorrelatable: Option<String>,
    /// Schema path of this entry (compile-time errors only; cleared after compiling).
    pub path: String,
    pub program: Option<Program>,
}

impl CelRule {
    pub(crate) fn heap_size(&self) -> usize {
        std::mem::size_of::<CelRule>()
            + self.rule.len()
            + self.message.as_ref().map_or(0, String::len)
            + self.message_expression.as_ref().map_or(0, String::len)
            + self
                .program
                .as_ref()
                .map_or(0, |p| (p.nodes + p.message_nodes) as usize * 96)
    }

    /// `ruleErrorString`: the trimmed message if set, else the trimmed rule.
    pub(crate) fn error_string(&self) -> &str {
        match self.message.as_deref() {
            Some(m) if !m.is_empty() => m.trim(),
            _ => self.rule.trim(),
        }
    }

    /// Go's `%#v` of the apiextensions `ValidationRule` (how compile errors show the rule).
    pub(crate) fn go_repr(&self) -> String {
        use kplane_types::validation::go_quote;
        let reason = match self.reason {
            Some(r) => format!(
                "(*apiextensions.FieldValueErrorReason)({})",
                go_quote(r.go_name())
            ),
            None => "(*apiextensions.FieldValueErrorReason)(nil)".into(),
        };
        let oos = match self.optional_old_self {
            Some(b) => format!("(*bool)({b})"),
            None => "(*bool)(nil)".into(),
        };
        format!(
            "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{oos}}}",
            go_quote(&self.rule),
            go_quote(self.message.as_deref().unwrap_or("")),
            go_quote(self.message_expression.as_deref().unwrap_or("")),
            go_quote(self.field_path.as_deref().unwrap_or("")),
        )
    }
}
