//! The HTTP client every request to a provider is built from (model requests, `http`;
//! the model list, `models`).

/// A client builder for requests to `base_url`. For a plain `http://` endpoint (a model
/// server on this machine or the local network) no TLS is ever spoken, so the system's
/// root certificates are not loaded: reading and parsing them is the largest part of a
/// client's start (about a millisecond and a half where a certificate directory holds
/// hundreds of files), and it would be paid by every backend. The root store is then
/// empty, so should such a client be sent to an `https://` address it fails to verify
/// the server rather than trust it.
pub(crate) fn builder(base_url: &str) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    let plain = base_url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    if plain {
        builder.tls_certs_only(Vec::<reqwest::Certificate>::new())
    } else {
        builder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_for_a_plain_http_endpoint_builds_without_root_certificates() {
        for base in ["http://127.0.0.1:8080/v1", "HTTP://localhost:11434/v1"] {
            assert!(builder(base).build().is_ok(), "{base}");
        }
        assert!(builder("https://api.example.com/v1").build().is_ok());
    }
}
