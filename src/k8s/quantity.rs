//! Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), parsed and printed
//! in kube-apiserver's canonical form so "1000m", "1" and 1 compare equal.
//!
//! OWNER: k8s-semantics helper. Stub until then.

/// A parsed quantity. Exact rational value and the suffix family it was written in.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    _private: (),
}

/// Parses a quantity string ("500m", "1.5Gi", "1e3"); `None` if it is not a quantity.
pub fn parse(_s: &str) -> Option<Quantity> {
    None
}

/// The canonical string kube-apiserver stores for `s` ("1000m" -> "1", "0.5" -> "500m",
/// "1536Mi" -> "1536Mi"), or `None` if `s` is not a quantity.
pub fn canonicalize(_s: &str) -> Option<String> {
    None
}

/// Whether two quantity strings denote the same amount ("1Gi" and "1024Mi").
pub fn equal(a: &str, b: &str) -> bool {
    a == b
}
