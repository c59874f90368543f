//! Proof Key for Code Exchange (RFC 7636, `S256`) and the random `state` of an
//! authorization request, from the operating system's random source.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::OAuthError;

/// A PKCE pair: the verifier kept here, the challenge sent with the authorization
/// request.
#[derive(Clone)]
pub struct Pkce {
    /// Sent with the code exchange.
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent with the authorization request.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pkce([hidden])")
    }
}

/// `bytes` random bytes, base64url without padding.
pub fn random(bytes: usize) -> Result<String, OAuthError> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer)
        .map_err(|e| OAuthError::local(format!("no random values could be had ({e})")))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

impl Pkce {
    /// A new pair: 64 random bytes make an 86-character verifier (RFC 7636 allows 43
    /// to 128).
    pub fn new() -> Result<Pkce, OAuthError> {
        Ok(Pkce::from_verifier(random(64)?))
    }

    /// The pair of a given verifier.
    pub fn from_verifier(verifier: String) -> Pkce {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_verifiers_sha256_in_base64url() {
        // SHA-256("abc") is FIPS 180-2's first example, ba7816bf…15ad.
        let pkce = Pkce::from_verifier("abc".into());
        assert_eq!(
            pkce.challenge,
            "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
        );
        let fresh = Pkce::new().unwrap();
        assert_eq!(fresh.verifier.len(), 86);
        assert_ne!(fresh.verifier, Pkce::new().unwrap().verifier);
        assert_eq!(format!("{fresh:?}"), "Pkce([hidden])");
    }
}
