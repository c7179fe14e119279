//! Which names a type accepts ([`NameRule`]), as the type's strategy says.

/// How names of a type are validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    Dns1123Subdomain,
    Dns1123Label,
    PathSegment,
}
