//! Where a schema object sits while a schema is built and checked: its [`Level`] in the
//! structural spine and the [`Walk`] state (path, depth, what the checks above it
//! decided) that the builder and the structural checks share.

use crate::path::join;

/// Where a schema object sits in the structural spine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Root,
    Item,
    Field,
}

/// Where a schema object sits, and what the checks above it decided for it.
#[derive(Clone)]
pub(crate) struct Walk {
    pub path: String,
    pub level: Level,
    /// Inside allOf/anyOf/oneOf/not (value validation only).
    pub nested: bool,
    /// Skip checking `anyOf` (the int-or-string exception).
    pub skip_any_of: bool,
    pub is_root: bool,
    pub depth: usize,
    pub allow_defaults: bool,
    pub disallow_defaults_reason: String,
    pub inside_resource_meta: bool,
    /// The first ancestor below which `oldSelf` cannot be correlated.
    pub uncorrelatable: Option<String>,
}

impl Walk {
    pub(crate) fn root(path: &str) -> Walk {
        Walk {
            path: path.to_string(),
            level: Level::Root,
            nested: false,
            skip_any_of: false,
            is_root: true,
            depth: 0,
            allow_defaults: true,
            disallow_defaults_reason: String::new(),
            inside_resource_meta: false,
            uncorrelatable: None,
        }
    }

    pub(crate) fn child(&self, suffix: &str, level: Level) -> Walk {
        let mut w = self.clone();
        w.path = join(&self.path, suffix);
        w.level = level;
        w.is_root = false;
        w.skip_any_of = false;
        w.depth = self.depth + 1;
        w
    }

    pub(crate) fn forbid_defaults(&mut self, reason: &str) {
        self.allow_defaults = false;
        self.disallow_defaults_reason = reason.to_string();
    }

    pub(crate) fn forbid_old_self(&mut self, path: &str) {
        if self.uncorrelatable.is_none() {
            self.uncorrelatable = Some(path.to_string());
        }
    }
}
