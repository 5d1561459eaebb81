//! The security policy of a View: its CSP header, its frame permissions and its origin. Pure.

pub mod csp;
pub mod origin;
pub mod permissions;
pub(crate) mod storage;

pub use csp::{build_csp, CspPolicy, RejectedSource};
pub use origin::{sandbox_label, HOST_ORIGIN, HOST_SCHEME, SANDBOX_SCHEME};
pub use permissions::{allow_attribute, FRAME_SANDBOX};
