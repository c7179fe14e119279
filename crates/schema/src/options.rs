//! The limits a schema is compiled and evaluated under: the configurable
//! [`CompileOptions`] and the fixed stack sizes of the deeply recursive phases (CEL
//! parsing and evaluation).

/// Stack a schema is compiled on (the CEL parser recurses deeply on long expressions):
/// reserved address space, not committed memory.
pub(crate) const COMPILE_STACK_BYTES: usize = 256 << 20;
/// Stack CEL evaluation may need at most (expression depth is capped at compile time);
/// when less remains on the calling thread, evaluation switches to a fresh stack segment.
pub(crate) const EVAL_RED_ZONE_BYTES: usize = if cfg!(debug_assertions) {
    16 << 20
} else {
    2 << 20
};
/// Size of that fresh segment.
pub(crate) const EVAL_STACK_BYTES: usize = 64 << 20;

/// Limits applied when compiling (and later evaluating) a schema. The defaults follow
/// Kubernetes where it has a limit and are generous-but-finite where it has none.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// Deepest nesting of schema objects (properties/items/additionalProperties/allOf...).
    pub max_depth: usize,
    /// Largest estimated cost of one rule times the number of times it can run
    /// (Kubernetes `StaticEstimatedCostLimit`, 10,000,000).
    pub max_cel_cost: u64,
    /// Largest summed estimated cost of all rules (`StaticEstimatedCRDCostLimit`, 100,000,000).
    pub max_total_cel_cost: u64,
    /// Runtime cost one rule evaluation may spend (`PerCallLimit`, 1,000,000).
    pub cel_per_call_limit: u64,
    /// Runtime cost all rules of one validation may spend (`RuntimeCELCostBudget`, 10,000,000).
    pub cel_runtime_budget: u64,
    /// Largest `enum`.
    pub max_enum_values: usize,
    /// Largest number of schema objects in one schema.
    pub max_schema_nodes: usize,
    /// Longest `pattern`, in bytes.
    pub max_pattern_length: usize,
    /// Size limit of one compiled regex (and of its lazy DFA), in bytes.
    pub regex_size_limit: usize,
    /// Longest CEL `rule` or `messageExpression`, in bytes.
    pub max_rule_length: usize,
}

impl CompileOptions {
    /// These options without the static cost limits (`max_cel_cost` and
    /// `max_total_cel_cost` unbounded): how kube-apiserver compiles the rules of a CRD it
    /// serves (estimated costs are checked when a CRD is written, never when it is served),
    /// and, with `max_cel_cost` alone unbounded, how it validates an update that leaves a
    /// version's schema unchanged.
    pub fn without_cost_limits(&self) -> CompileOptions {
        CompileOptions {
            max_cel_cost: u64::MAX,
            max_total_cel_cost: u64::MAX,
            ..self.clone()
        }
    }
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            max_depth: 64,
            max_cel_cost: 10_000_000,
            max_total_cel_cost: 100_000_000,
            cel_per_call_limit: 1_000_000,
            cel_runtime_budget: 10_000_000,
            max_enum_values: 10_000,
            max_schema_nodes: 100_000,
            max_pattern_length: 16 * 1024,
            regex_size_limit: 1 << 20,
            max_rule_length: 16 * 1024,
        }
    }
}
