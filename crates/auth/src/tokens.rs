//! The tokens of one sign-in and what their expiry means for their use: fresh, due for
//! a refresh, expired for good, or unknown.

use std::time::{Duration, SystemTime};

use magi_protocol::limits::TOKEN_REFRESH_MARGIN_MS;

use crate::jwt;

/// The tokens of a sign-in. `Debug` never shows a value.
#[derive(Clone, PartialEq, Eq)]
pub struct Tokens {
    /// Sent as `Authorization: Bearer …`.
    pub access_token: String,
    /// Exchanged for new tokens when the access token expires; none when the issuer
    /// gave none (the sign-in then ends with its access token).
    pub refresh_token: Option<String>,
    /// The OpenID Connect ID token, when the issuer gave one (the account, the email).
    pub id_token: Option<String>,
    /// When the access token expires, when the issuer said (`expires_in`); otherwise
    /// the token's own `exp` claim is read.
    pub expires_at: Option<SystemTime>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &"[hidden]")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "[hidden]"),
            )
            .field("id_token", &self.id_token.as_ref().map(|_| "[hidden]"))
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Where a sign-in's access token stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Valid for longer than the refresh margin.
    Fresh,
    /// Expired or within the margin, and a refresh token is there.
    Refreshable,
    /// Expired or within the margin, with no refresh token: a new sign-in is needed
    /// once it has expired.
    Expiring,
    /// The expiry is unknown (the token is not a JWT, or has no `exp`): it is used,
    /// and refreshed if the server refuses it.
    Unknown,
}

impl Tokens {
    /// When the access token expires: as the issuer said, else its `exp` claim.
    pub fn expiry(&self) -> Option<SystemTime> {
        self.expires_at
            .or_else(|| jwt::claims(&self.access_token).and_then(|c| c.expires_at))
    }

    /// Where the access token stands at `now`.
    pub fn freshness(&self, now: SystemTime) -> Freshness {
        let Some(expiry) = self.expiry() else {
            return Freshness::Unknown;
        };
        let margin = Duration::from_millis(TOKEN_REFRESH_MARGIN_MS);
        if expiry > now + margin {
            Freshness::Fresh
        } else if self.refresh_token.is_some() {
            Freshness::Refreshable
        } else {
            Freshness::Expiring
        }
    }

    /// Whether the sign-in can be used at `now` without a new sign-in: not expired, or
    /// refreshable, or of unknown expiry (tried, as the issue of a token without an
    /// expiry intends).
    pub fn usable(&self, now: SystemTime) -> bool {
        match self.freshness(now) {
            Freshness::Fresh | Freshness::Refreshable | Freshness::Unknown => true,
            Freshness::Expiring => self.expiry().is_some_and(|expiry| expiry > now),
        }
    }

    /// Every token value: redacted from what the backend sends, records and gives the
    /// model.
    pub fn secrets(&self) -> Vec<String> {
        std::iter::once(self.access_token.clone())
            .chain(self.refresh_token.clone())
            .chain(self.id_token.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tokens(exp: Option<u64>, refresh: bool) -> Tokens {
        let access = match exp {
            Some(exp) => jwt::unsigned(&json!({ "exp": exp })),
            None => "opaque".to_owned(),
        };
        Tokens {
            access_token: access,
            refresh_token: refresh.then(|| "rt".to_owned()),
            id_token: None,
            expires_at: None,
        }
    }

    #[test]
    fn freshness_follows_the_expiry_and_the_refresh_token() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let secs = |s: u64| Some(1_000_000 + s);
        assert_eq!(tokens(secs(3_600), false).freshness(now), Freshness::Fresh);
        // Within the margin counts as due.
        assert_eq!(
            tokens(secs(60), true).freshness(now),
            Freshness::Refreshable
        );
        assert_eq!(tokens(secs(60), false).freshness(now), Freshness::Expiring);
        assert!(tokens(secs(60), false).usable(now));
        assert!(!tokens(Some(999_000), false).usable(now));
        assert!(tokens(Some(999_000), true).usable(now));
        assert_eq!(tokens(None, false).freshness(now), Freshness::Unknown);
        assert!(tokens(None, false).usable(now));
        // The issuer's own word wins over the claim.
        let mut stated = tokens(secs(3_600), false);
        stated.expires_at = Some(now);
        assert_eq!(stated.freshness(now), Freshness::Expiring);
    }

    #[test]
    fn debug_hides_every_value() {
        let mut t = tokens(Some(1), true);
        t.id_token = Some("id-value".into());
        let shown = format!("{t:?}");
        assert!(
            !shown.contains("eyJ") && !shown.contains("id-value"),
            "{shown}"
        );
    }
}
