use super::*;

/// A URL that does not parse is quoted without what may be a secret.
#[test]
fn an_invalid_url_is_quoted_without_its_credentials() {
    let e =
        valid_http_url("http://llmuser:URLPASS@127.0.0.1:99999/v1/chat?apikey=Q12").unwrap_err();
    assert_eq!(
        e,
        "invalid URL \"http://…@127.0.0.1:99999/v1/chat…\": invalid port number"
    );
    let e = valid_http_url("http//127.0.0.1:32002/hook?token=SECRET-G7").unwrap_err();
    assert!(!e.contains("SECRET"), "{e}");
    assert!(e.contains("\"http//127.0.0.1:32002/hook…\""), "{e}");
    let e = valid_http_url("http://a b.example/x#frag").unwrap_err();
    assert!(e.contains("\"http://a b.example/x…\""), "{e}");
}

#[test]
fn only_a_small_regular_file_is_read_as_a_certificate() {
    let e = read_certificate(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(e, "/dev/zero is not a regular file");
    let dir = tempfile::tempdir().unwrap();
    assert!(read_certificate(dir.path())
        .unwrap_err()
        .ends_with("is not a regular file"));
    let big = dir.path().join("big.pem");
    std::fs::write(&big, vec![b'a'; (MAX_CERTIFICATE_FILE + 1) as usize]).unwrap();
    assert!(read_certificate(&big)
        .unwrap_err()
        .ends_with("is larger than 1 MiB"));
    // A FIFO nobody writes to: refused, not waited on.
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert!(read_certificate(&fifo)
        .unwrap_err()
        .ends_with("is not a regular file"));
}
