//! A compiled schema and how one is made: [`compile`] runs the schema checks, builds the
//! node tree and compiles the CEL rules; [`CompiledSchema`] then prunes, defaults and
//! validates objects (with ratcheting on update, [`Validation`]) and answers list and map
//! types by path.

use kplane_types::Cause;
use serde_json::Value;

use crate::node::{ListType, MapType, Node, PathElem};
use crate::options::{CompileOptions, COMPILE_STACK_BYTES, EVAL_RED_ZONE_BYTES, EVAL_STACK_BYTES};
use crate::path::PathStack;
use crate::walk::Walk;
use crate::{
    build, cel, defaults, errors, listtype, node, objectmeta, prune, ratchet, structural, validate,
};

/// A compiled structural schema of one CRD version (its openAPIV3Schema), immutable and
/// shared (`Arc`) by every logical cluster that installs an identical schema.
#[derive(Debug)]
pub struct CompiledSchema {
    root: Node,
    nodes: usize,
    rules: usize,
    /// Whether any rule uses `oldSelf` (an update's CEL validation then needs the old object).
    transition_rules: bool,
    per_call: u64,
    budget: u64,
    /// Every CEL expression's estimated cost, for [`CompiledSchema::cost_limit_errors`].
    costs: Vec<cel::ExprCost>,
}

/// Checks that `schema` is structural and valid as a CRD schema and compiles it (regexes,
/// CEL rules). Errors are field causes with paths under `field_prefix` (e.g.
/// `spec.versions[0].schema.openAPIV3Schema`).
pub fn compile(
    schema: &Value,
    field_prefix: &str,
    opts: &CompileOptions,
) -> Result<CompiledSchema, Vec<Cause>> {
    stacker::grow(COMPILE_STACK_BYTES, || {
        compile_on_this_thread(schema, field_prefix, opts).map_err(|(errs, _)| errs)
    })
}

/// [`compile`] under `opts` without its static cost limits (the form [`SchemaCache`]
/// shares); refused with the errors [`compile`] reports under `opts`.
pub(crate) fn compile_without_cost_limits(
    schema: &Value,
    field_prefix: &str,
    opts: &CompileOptions,
) -> Result<CompiledSchema, Vec<Cause>> {
    let unlimited = opts.without_cost_limits();
    let (errs, costs) = match stacker::grow(COMPILE_STACK_BYTES, || {
        compile_on_this_thread(schema, field_prefix, &unlimited)
    }) {
        Ok(compiled) => return Ok(compiled),
        Err(refused) => refused,
    };
    if cel::cost_limit_errors(&costs, field_prefix, opts).is_empty() {
        return Err(errs);
    }
    // Under `opts` an expression is refused for its cost (and the defaults are then not
    // checked): those errors, as `compile` reports them.
    match compile(schema, field_prefix, opts) {
        Err(limited) => Err(limited),
        Ok(_) => Err(errs),
    }
}

/// Compiles `schema`; when refused, the errors and the costs of the expressions compiled.
fn compile_on_this_thread(
    schema: &Value,
    prefix: &str,
    opts: &CompileOptions,
) -> Result<CompiledSchema, (Vec<Cause>, Vec<cel::ExprCost>)> {
    let mut b = build::Builder::new(opts);
    let mut root = b.node(schema, &Walk::root(prefix));
    let mut structural_errs = std::mem::take(&mut b.structural_errs);
    structural::completeness(&root, prefix, &mut structural_errs);
    structural_errs.sort_by_key(Cause::render);
    let mut errs = structural_errs;
    errs.append(&mut b.schema_errs);
    if errs.is_empty()
        && schema
            .get("$schema")
            .is_some_and(|s| s.as_str().is_some_and(|s| !s.is_empty()))
    {
        errs.push(errors::invalid(
            prefix,
            "\"\"",
            "OpenAPIV3Schema 'schema' is not supported",
        ));
    }
    if !errs.is_empty() {
        return Err((errs, Vec::new()));
    }
    let mut cc = cel::CelCompiler::new(opts);
    cc.compile_tree(&mut root, Some(1), true);
    let (mut cel_errs, costs) = cc.finish(prefix);
    let mut default_errs = Vec::new();
    if cel_errs.is_empty() {
        defaults::validate_defaults(&root, prefix, false, true, &mut default_errs);
    }
    default_errs.append(&mut cel_errs);
    if !default_errs.is_empty() {
        return Err((default_errs, costs));
    }
    let rules = count_rules(&root);
    let transition_rules = any_transition_rule(&root);
    Ok(CompiledSchema {
        root,
        nodes: b.nodes,
        rules,
        transition_rules,
        per_call: opts.cel_per_call_limit,
        budget: opts.cel_runtime_budget,
        costs,
    })
}

fn count_rules(n: &Node) -> usize {
    n.rules.len()
        + n.properties
            .iter()
            .map(|(_, p)| count_rules(p))
            .sum::<usize>()
        + n.items.as_deref().map_or(0, count_rules)
        + n.additional.schema().map_or(0, count_rules)
}

fn any_transition_rule(n: &Node) -> bool {
    n.rules
        .iter()
        .any(|r| r.program.as_ref().is_some_and(|p| p.uses_old_self))
        || n.properties.iter().any(|(_, p)| any_transition_rule(p))
        || n.items.as_deref().is_some_and(any_transition_rule)
        || n.additional.schema().is_some_and(any_transition_rule)
}

/// What validating an update found: the errors, and the warnings of the CEL failures that
/// ratcheting let through (`warning.AddWarning` in upstream's CEL validator).
#[derive(Debug, Default)]
pub struct Validation {
    pub errors: Vec<Cause>,
    pub warnings: Vec<String>,
}

/// The old object of an update in the form upstream validates it against: read back from
/// storage, so pruned and defaulted under the current schema. Prepared on first use only.
struct OldObject<'a> {
    schema: &'a CompiledSchema,
    stored: &'a Value,
    prepared: std::cell::OnceCell<Value>,
}

impl OldObject<'_> {
    fn get(&self) -> &Value {
        self.prepared.get_or_init(|| {
            let mut old = self.stored.clone();
            self.schema.prune(&mut old);
            self.schema.apply_defaults(&mut old);
            old
        })
    }
}

impl CompiledSchema {
    /// The static CEL cost limits of `opts` applied to this schema, with paths under
    /// `field_prefix`: what [`compile`] with `opts` would report for costs, whatever limits
    /// this schema was compiled with. A schema compiled within `opts`' limits has none.
    pub fn cost_limit_errors(&self, field_prefix: &str, opts: &CompileOptions) -> Vec<Cause> {
        cel::cost_limit_errors(&self.costs, field_prefix, opts)
    }

    /// Removes fields the schema does not allow (honouring x-kubernetes-preserve-unknown-fields
    /// and embedded resources, whose apiVersion/kind/metadata stay and whose metadata is reduced
    /// to ObjectMeta's fields). At the root apiVersion, kind and metadata are kept untouched
    /// (the server prunes metadata to ObjectMeta). Returns the removed paths (`spec.foo`,
    /// `spec.items[0].bar`), sorted, for fieldValidation.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut p = prune::Pruner::new();
        p.prune(obj, Some(&self.root), true);
        let mut out = p.pruned;
        out.sort();
        out
    }

    /// Applies `default`s: first drops `null`s of fields that are neither nullable nor
    /// defaulted (upstream `PruneNonNullableNullsWithoutDefaults`), then sets defaults for
    /// missing fields and non-nullable `null`s, including inside array items and
    /// additionalProperties. Defaults are stored pruned, so defaulting adds no unknown fields.
    pub fn apply_defaults(&self, obj: &mut Value) {
        prune::prune_nulls(obj, Some(&self.root), 0);
        defaults::apply(obj, &self.root, 0);
    }

    /// Validates an object (after pruning and defaulting): OpenAPI value validation,
    /// embedded-resource metadata, list-type set/map uniqueness, and CEL
    /// `x-kubernetes-validations`. Returns every violation.
    ///
    /// On update (`old` given, as stored) this is [`CompiledSchema::validate_update`]'s
    /// errors.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        if let Some(old) = old {
            return self.validate_update(obj, old).errors;
        }
        let mut out = Vec::new();
        self.validate_openapi(obj, None, &mut out);
        objectmeta::validate(&self.root, obj, "", &mut out);
        listtype::validate(&self.root, obj, "", &mut out);
        if self.root.cel_below {
            self.validate_cel(obj, None, None, &mut out, &mut Vec::new());
        }
        out
    }

    /// Validates an update of `old` (the stored object) to `obj` with Kubernetes' CRD
    /// validation ratcheting (`customResourceStrategy.ValidateUpdate`): errors of values
    /// unchanged from their correlated old values are dropped (OpenAPI validation), `set`
    /// and `map` uniqueness errors are dropped when the old object has such errors too, and
    /// failures of CEL rules without `oldSelf` on unchanged values become warnings;
    /// embedded-resource metadata, transition rules and CEL evaluation errors are never
    /// ratcheted. `old` is pruned and defaulted as a read from storage would be.
    ///
    /// Ratcheting costs nothing when the update is valid: the old object is prepared and
    /// compared only once there are errors (or transition rules need it).
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Validation {
        // the prepared copy of a deeply nested old object is dropped recursively
        stacker::maybe_grow(EVAL_RED_ZONE_BYTES, EVAL_STACK_BYTES, || {
            self.validate_update_here(obj, old)
        })
    }

    fn validate_update_here(&self, obj: &Value, old: &Value) -> Validation {
        let old = OldObject {
            schema: self,
            stored: old,
            prepared: std::cell::OnceCell::new(),
        };
        let ratchet = ratchet::Ratchet::default();
        let mut errors = Vec::new();
        self.validate_openapi(obj, None, &mut errors);
        if !errors.is_empty() {
            errors.clear();
            self.validate_openapi(obj, Some((old.get(), &ratchet)), &mut errors);
        }
        objectmeta::validate(&self.root, obj, "", &mut errors);
        let mut lists = Vec::new();
        listtype::validate(&self.root, obj, "", &mut lists);
        if !lists.is_empty() {
            let mut old_lists = Vec::new();
            listtype::validate(&self.root, old.get(), "", &mut old_lists);
            if !old_lists.is_empty() {
                lists.clear();
            }
        }
        errors.append(&mut lists);
        let mut warnings = Vec::new();
        if self.root.cel_below {
            let mark = errors.len();
            if !self.transition_rules {
                // without transition rules the old object changes nothing but which
                // failures are ratcheted: needed only when some rule failed
                self.validate_cel(obj, None, None, &mut errors, &mut warnings);
            }
            if self.transition_rules || errors.len() > mark {
                errors.truncate(mark);
                let with_old = Some(old.get());
                self.validate_cel(obj, with_old, Some(&ratchet), &mut errors, &mut warnings);
            }
        }
        Validation { errors, warnings }
    }

    fn validate_openapi(
        &self,
        obj: &Value,
        old: Option<(&Value, &ratchet::Ratchet)>,
        out: &mut Vec<Cause>,
    ) {
        validate::Validator {
            base: "",
            out,
            ratchet: old.map(|(_, r)| r),
        }
        .node(
            &self.root,
            obj,
            old.map(|(o, _)| o),
            &mut PathStack::default(),
        );
    }

    fn validate_cel(
        &self,
        obj: &Value,
        old: Option<&Value>,
        ratchet: Option<&ratchet::Ratchet>,
        out: &mut Vec<Cause>,
        warnings: &mut Vec<String>,
    ) {
        stacker::maybe_grow(EVAL_RED_ZONE_BYTES, EVAL_STACK_BYTES, || {
            let limits = cel::eval::Limits {
                budget: self.budget,
                per_call: self.per_call,
            };
            cel::eval::validate_with_limits(
                &self.root, obj, old, "", limits, ratchet, out, warnings,
            );
        });
    }

    /// `x-kubernetes-list-type` (with map keys) of the array at `path`; `Atomic` for arrays
    /// without one, `None` when the path does not lead to an array of the schema.
    pub fn list_type_at(&self, path: &[PathElem]) -> Option<ListType> {
        let n = self.node_at(path)?;
        match n.ty {
            Some(node::Ty::Array) => Some(n.list_type.clone().unwrap_or(ListType::Atomic)),
            _ => None,
        }
    }

    /// `x-kubernetes-map-type` of the object at `path` (`Granular` when unset).
    pub fn map_type_at(&self, path: &[PathElem]) -> Option<MapType> {
        let n = self.node_at(path)?;
        match n.ty {
            Some(node::Ty::Object) => Some(n.map_type.unwrap_or(MapType::Granular)),
            _ => None,
        }
    }

    fn node_at(&self, path: &[PathElem]) -> Option<&Node> {
        let mut n = &self.root;
        for e in path {
            n = match e {
                PathElem::Field(f) => n.child_for_key(f)?,
                PathElem::Index(_) => n.items.as_deref()?,
            };
        }
        Some(n)
    }

    /// Whether any field has a default (so defaulting can be skipped when false).
    pub fn has_defaults(&self) -> bool {
        self.root.defaults_below
    }

    /// Whether the schema has CEL rules.
    pub fn has_cel_rules(&self) -> bool {
        self.root.cel_below
    }

    /// Number of schema objects and of CEL rules.
    pub fn stats(&self) -> (usize, usize) {
        (self.nodes, self.rules)
    }

    /// Approximate heap footprint of the compiled schema, in bytes.
    pub fn approx_memory_bytes(&self) -> usize {
        std::mem::size_of::<CompiledSchema>()
            + self.root.heap_size()
            + self
                .costs
                .iter()
                .map(cel::ExprCost::heap_size)
                .sum::<usize>()
    }
}
