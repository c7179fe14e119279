//! The global forms of `size`, `string`, `int`, `uint` and `double` with cel-go's errors,
//! and `dyn`, the identity conversion cel-go declares and the `cel` crate lacks.
//! The `cel` crate resolves their one operand through its `This` extractor, which reports
//! any error of that operand (`size(self.missing)`: no such key) as "missing argument or
//! target"; cel-go passes the operand's own error on, and kube-apiserver's messages quote
//! it. These wrappers resolve the operand themselves, so its error is the call's, and then
//! call the function they replace: the crate's, or for `string` kube-cel's (which also
//! converts IPs and CIDRs), run on the operand in a context of its own.

use std::sync::LazyLock;

use kube_cel::cel::extractors::This;
use kube_cel::cel::functions;
use kube_cel::cel::{Context, ExecutionError, FunctionContext, Program, Value as Cel};
use kube_cel::KubeCelExt;

/// The functions as the libraries register them, for `string`'s own conversion.
static LIBRARIES: LazyLock<Context<'static>> = LazyLock::new(|| Context::default().with_all());

/// `string(x)`, run in [`LIBRARIES`] with the resolved operand as `x`.
static STRING_OF_X: LazyLock<Option<Program>> =
    LazyLock::new(|| Program::compile("string(x)").ok());

/// The call's target, or else its first argument, with the argument's own error.
fn operand(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    if let Some(t) = &ftx.this {
        return Ok(t.clone());
    }
    let first = ftx
        .args
        .first()
        .ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?;
    Cel::resolve(first, ftx.ptx)
}

fn size(ftx: &FunctionContext) -> Result<i64, ExecutionError> {
    functions::size(ftx, This(operand(ftx)?))
}

fn string(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    let x = operand(ftx)?;
    let Some(program) = STRING_OF_X.as_ref() else {
        return functions::string(ftx, This(x));
    };
    let mut scope = LIBRARIES.new_inner_scope();
    scope.add_variable_from_value("x", x);
    program.execute(&scope)
}

fn int(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    functions::int(ftx, This(operand(ftx)?))
}

fn uint(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    functions::uint(ftx, This(operand(ftx)?))
}

fn double(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    functions::double(ftx, This(operand(ftx)?))
}

/// `dyn(x)`: `x` itself (the conversion changes only the type the checker gives it).
fn dyn_(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    if ftx.this.is_some() || ftx.args.len() != 1 {
        return Err(ExecutionError::function_error("dyn", "no such overload"));
    }
    operand(ftx)
}

/// Puts the wrappers in place of the crate's functions of the same names, and adds `dyn`.
pub(crate) fn register(ctx: &mut Context<'static>) {
    ctx.add_function("dyn", dyn_);
    ctx.add_function("size", size);
    ctx.add_function("string", string);
    ctx.add_function("int", int);
    ctx.add_function("uint", uint);
    ctx.add_function("double", double);
}
