//! The API surface of a catalog: its discovery documents and OpenAPI v3 documents, built
//! once per distinct catalog and shared by every logical cluster that serves it, and its
//! OpenAPI v2 document, built on first request and then shared the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::SystemTime;

use super::discovery::Discovery;
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::Catalog;

/// Discovery and OpenAPI for one catalog.
#[derive(Debug)]
pub struct Surface {
    pub discovery: Discovery,
    pub openapi: kplane_openapi::OpenApiV3,
    /// `/openapi/v2` and when it was built (its `Last-Modified`), made on first use.
    openapi_v2: OnceLock<Result<(kplane_openapi::OpenApiV2, SystemTime), String>>,
}

impl Surface {
    /// The OpenAPI v2 document of `catalog` (the catalog this surface was built for), built
    /// on the first call; later calls return the same encoded document (or the same error).
    pub fn openapi_v2(
        &self,
        catalog: &Catalog,
    ) -> Result<(&kplane_openapi::OpenApiV2, SystemTime), String> {
        let built = self.openapi_v2.get_or_init(|| {
            kplane_openapi::OpenApiV2::build(&served_resources(catalog))
                .map(|doc| (doc, SystemTime::now()))
                .map_err(|e| format!("building OpenAPI v2: {e}"))
        });
        match built {
            Ok((doc, at)) => Ok((doc, *at)),
            Err(e) => Err(e.clone()),
        }
    }
}

/// A cached surface with the catalog it was built for (dropped once that catalog is gone).
type Entry = (Weak<Catalog>, Arc<Surface>);

/// Surfaces by catalog fingerprint; an entry lives as long as its catalog.
#[derive(Debug, Default)]
pub struct Surfaces {
    cache: Mutex<HashMap<String, Entry>>,
}

/// What OpenAPI publishes for a catalog.
pub fn served_resources(catalog: &Catalog) -> Vec<kplane_openapi::ServedResource> {
    catalog
        .all()
        .iter()
        .map(|rt| kplane_openapi::ServedResource {
            group: rt.group.clone(),
            version: rt.version.clone(),
            kind: rt.kind.clone(),
            plural: rt.plural.clone(),
            namespaced: rt.namespaced,
            verbs: rt.verbs.iter().map(|v| v.to_string()).collect(),
            subresources: rt.subresources.iter().map(|(s, _)| s.clone()).collect(),
            schema: match &rt.custom {
                Some(info) => kplane_openapi::SchemaSource::Custom {
                    schema: info.raw_schema.clone(),
                },
                _ => kplane_openapi::SchemaSource::BuiltIn(rt.schema_name.clone()),
            },
        })
        .collect()
}

impl Surfaces {
    /// The surface of `catalog`, building it on first use.
    pub fn for_catalog(&self, catalog: &Arc<Catalog>) -> ApiResult<Arc<Surface>> {
        let key = catalog.fingerprint().to_string();
        if let Some((_, s)) = self.cache.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(s);
        }
        let openapi = kplane_openapi::OpenApiV3::build(&served_resources(catalog))
            .map_err(|e| ApiError::internal(format!("building OpenAPI: {e}")))?;
        let surface = Arc::new(Surface {
            discovery: Discovery::new(catalog),
            openapi,
            openapi_v2: OnceLock::new(),
        });
        if let Ok(mut m) = self.cache.lock() {
            m.retain(|_, (c, _)| c.strong_count() > 0);
            m.insert(key, (Arc::downgrade(catalog), surface.clone()));
        }
        Ok(surface)
    }
}
