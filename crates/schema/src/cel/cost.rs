//! The arithmetic of Kubernetes' static CEL cost estimate (cel-go's `checker` estimator
//! with the Kubernetes library estimator), kept bit-for-bit: sizes are ranges that saturate
//! at `u64::MAX`, cost factors are applied in `f64` and rounded up, and the field paths the
//! estimator looks sizes up by behave as Go slices do (see [`GoPath`]).
//!
//! Only the upper bound of a cost decides anything, so costs are plain `u64` maxima; sizes
//! keep their lower bound too, which a few formulas (`replace`, `join`, conditionals) read.

use std::cell::RefCell;
use std::rc::Rc;

/// Cost of reading a variable or selecting a field.
pub(crate) const SELECT_AND_IDENT: u64 = 1;
/// Cost of building a list literal.
pub(crate) const LIST_CREATE: u64 = 10;
/// Cost of building a map literal.
pub(crate) const MAP_CREATE: u64 = 30;
/// `common.StructCreateBaseCost`.
pub(crate) const STRUCT_CREATE: u64 = 40;
/// What one authorization check costs (the Kubernetes library's fixed figure, "to allow
/// for only two authorization checks per expression").
pub(crate) const AUTHZ_CHECK: u64 = 350_000;
/// Cost of traversing one character (byte) of a string.
pub(crate) const STRING_TRAVERSAL: f64 = 0.1;
/// Cost per pattern character of applying a regex to a string of unit cost.
pub(crate) const REGEX_STRING_LENGTH: f64 = 0.25;
/// Largest format-name regex the `validate` of named formats may run (`MaxNameFormatRegexSize`).
pub(crate) const MAX_NAME_FORMAT_REGEX: f64 = 128.0;

/// A size range (string length, list items or map entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Size {
    pub min: u64,
    pub max: u64,
}

impl Size {
    pub(crate) const UNKNOWN: Size = Size {
        min: 0,
        max: u64::MAX,
    };

    pub(crate) fn exact(n: u64) -> Size {
        Size { min: n, max: n }
    }

    pub(crate) fn up_to(max: u64) -> Size {
        Size { min: 0, max }
    }

    pub(crate) fn add(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    pub(crate) fn mul(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    pub(crate) fn union(self, o: Size) -> Size {
        Size {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }

    /// The cost of `factor` per unit of the largest size, rounded up.
    pub(crate) fn cost(self, factor: f64) -> u64 {
        by_factor(self.max, factor)
    }
}

/// `selectorCostEstimate` (its maximum) for a field or label selector of `len`
/// characters: a list, the parse, and a struct and a list per requirement (at most one
/// per two characters).
pub(crate) fn selector_cost(len: u64) -> u64 {
    let requirements = by_factor(len, 0.5);
    let per_requirement = (LIST_CREATE + STRUCT_CREATE) as f64;
    LIST_CREATE
        .saturating_add(by_factor(len, STRING_TRAVERSAL))
        .saturating_add(by_factor(requirements, per_requirement))
}

/// `x * factor` rounded up, saturating (cel-go's `multiplyByCostFactor`, in `f64`).
pub(crate) fn by_factor(x: u64, factor: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && factor > 0.0 && xf > u64::MAX as f64 / factor {
        return u64::MAX;
    }
    let ceil = (xf * factor).ceil();
    if ceil >= 18_446_744_073_709_551_616.0 {
        return u64::MAX;
    }
    ceil as u64
}

/// A field path the estimator looks sizes up by, shaped like the Go slice upstream keeps
/// it in: paths grow by `append` onto their operand's path, so two paths appended to the
/// same shorter path with spare capacity share one backing array, and the later append
/// overwrites the earlier one's last element. cel-go reads the sizes of a call's arguments
/// only after costing all of them, so `x.a == x.b` inside a comprehension over a deep
/// enough list can see `x.b`'s size on both sides; kube-apiserver's figures include that
/// effect, and so do ours.
#[derive(Clone, Debug)]
pub(crate) struct GoPath {
    buf: Rc<RefCell<Vec<Rc<str>>>>,
    len: usize,
}

impl GoPath {
    /// A one-element path (a variable).
    pub(crate) fn var(name: &str) -> GoPath {
        GoPath {
            buf: Rc::new(RefCell::new(vec![Rc::from(name)])),
            len: 1,
        }
    }

    /// `append(path, step)`: in place when the backing array has room, else into a new
    /// array of twice the capacity. That is how Go grows slices of strings up to 64
    /// elements (the doubled sizes are exact allocation classes); past that Go's growth
    /// differs, but a path that long reaches below the default deepest schema, so its
    /// size is unknown however it reads.
    pub(crate) fn append(path: Option<&GoPath>, step: &str) -> GoPath {
        if let Some(p) = path {
            let mut buf = p.buf.borrow_mut();
            if p.len < buf.len() {
                buf[p.len] = Rc::from(step);
                return GoPath {
                    buf: p.buf.clone(),
                    len: p.len + 1,
                };
            }
        }
        let len = path.map_or(0, |p| p.len) + 1;
        let mut elems: Vec<Rc<str>> =
            path.map_or_else(Vec::new, |p| p.buf.borrow()[..p.len].to_vec());
        elems.push(Rc::from(step));
        // a full slice has len == cap; a nil one has cap 0 and grows to 1
        elems.resize((2 * (len - 1)).max(len), Rc::from(""));
        GoPath {
            buf: Rc::new(RefCell::new(elems)),
            len,
        }
    }

    /// The path's elements as they read now.
    pub(crate) fn read(&self) -> Vec<Rc<str>> {
        self.buf.borrow()[..self.len].to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_round_up_and_saturate() {
        assert_eq!(by_factor(7, STRING_TRAVERSAL), 1);
        assert_eq!(by_factor(10, STRING_TRAVERSAL), 1);
        assert_eq!(by_factor(11, STRING_TRAVERSAL), 2);
        assert_eq!(by_factor(0, STRING_TRAVERSAL), 0);
        assert_eq!(by_factor(u64::MAX, 1.0), u64::MAX);
        // in f64, as Go computes it: 2^64 * 0.1
        assert_eq!(
            by_factor(u64::MAX, STRING_TRAVERSAL),
            1_844_674_407_370_955_264
        );
        assert_eq!(by_factor(3_145_726, 2.0 * STRING_TRAVERSAL), 629_146);
    }

    #[test]
    fn paths_share_spare_capacity_like_go_slices() {
        let self_ = GoPath::var("self");
        let a = GoPath::append(Some(&self_), "a"); // cap 2
        let b = GoPath::append(Some(&a), "b"); // cap 4, len 3
        let c = GoPath::append(Some(&b), "c"); // in place: len 4
        let d = GoPath::append(Some(&c), "d"); // cap 8, len 5
                                               // two appends onto `d` share the array: the second overwrites the first
        let x1 = GoPath::append(Some(&d), "@items");
        let x2 = GoPath::append(Some(&d), "@items");
        let f1 = GoPath::append(Some(&x1), "f1");
        let f2 = GoPath::append(Some(&x2), "f2");
        let names = |p: &GoPath| p.read().iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(names(&f1), ["self", "a", "b", "c", "d", "@items", "f2"]);
        assert_eq!(names(&f2), ["self", "a", "b", "c", "d", "@items", "f2"]);
        // a full slice copies: `a` (len 2, cap 2) gives independent children
        let y1 = GoPath::append(Some(&a), "y1");
        let y2 = GoPath::append(Some(&a), "y2");
        assert_eq!(names(&y1), ["self", "a", "y1"]);
        assert_eq!(names(&y2), ["self", "a", "y2"]);
        assert_eq!(names(&GoPath::append(None, "@items")), ["@items"]);
    }
}
