//! One relay frame on the wire: a 4-byte big-endian length, the [`RelayFrame`] as JSON, then
//! the body bytes of a request or response.

use abr_protocol::relay::RelayFrame;
use axum::body::Bytes;

use super::RelayError;

/// The largest JSON head of a frame (method, path, headers): the body is counted apart.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// Encodes `frame` with `body`.
pub(crate) fn encode(frame: &RelayFrame, body: &[u8]) -> Result<Bytes, RelayError> {
    let head = serde_json::to_vec(frame).map_err(|_| RelayError::Protocol("unencodable frame"))?;
    let len =
        u32::try_from(head.len()).map_err(|_| RelayError::Protocol("frame head too large"))?;
    let mut out = Vec::with_capacity(4 + head.len() + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(body);
    Ok(Bytes::from(out))
}

/// Decodes a binary message into its frame and body.
pub(crate) fn decode(message: &Bytes) -> Result<(RelayFrame, Bytes), RelayError> {
    let Some((len, rest)) = message.split_first_chunk::<4>() else {
        return Err(RelayError::Protocol("a frame shorter than its length"));
    };
    let len = u32::from_be_bytes(*len) as usize;
    if len > MAX_HEAD || len > rest.len() {
        return Err(RelayError::Protocol("a frame head out of bounds"));
    }
    let frame = serde_json::from_slice(&rest[..len])
        .map_err(|_| RelayError::Protocol("a frame that is not a relay frame"))?;
    Ok((frame, message.slice(4 + len..)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_with_its_body() {
        let frame = RelayFrame::Request {
            id: 7,
            method: "POST".into(),
            path: "/v1/post?x=1".into(),
            headers: vec![("content-type".into(), "application/json".into())],
        };
        let bytes = encode(&frame, b"{\"a\":1}").unwrap();
        let (back, body) = decode(&bytes).unwrap();
        assert_eq!(back, frame);
        assert_eq!(&body[..], b"{\"a\":1}");
    }

    #[test]
    fn garbage_is_a_protocol_error_never_a_panic() {
        for bad in [
            &b""[..],
            &b"\x00\x00"[..],
            &b"\xff\xff\xff\xff{}"[..],
            &b"\x00\x00\x00\x05{}"[..],
            &b"\x00\x00\x00\x02{}"[..],
            &b"\x00\x00\x00\x0e{\"type\":\"nope\"}"[..],
        ] {
            assert!(decode(&Bytes::copy_from_slice(bad)).is_err(), "{bad:?}");
        }
    }

    /// Fuzz target (bolero; `cargo test fuzz_`): any message is a frame or a protocol
    /// error, never a panic; what decodes encodes back to a message that decodes the same.
    #[test]
    fn fuzz_relay_frames() {
        bolero::check!().for_each(|bytes: &[u8]| {
            let message = Bytes::copy_from_slice(bytes);
            if let Ok((frame, body)) = decode(&message) {
                let again = encode(&frame, &body).unwrap();
                let (back, back_body) = decode(&again).unwrap();
                assert_eq!(back, frame);
                assert_eq!(back_body, body);
            }
        });
        // Frames the runner sends, with any body: they round-trip.
        bolero::check!()
            .with_type::<(u64, String, String, Vec<(String, String)>, Vec<u8>)>()
            .for_each(|(id, method, path, headers, body)| {
                let frame = RelayFrame::Request {
                    id: *id,
                    method: method.clone(),
                    path: path.clone(),
                    headers: headers.clone(),
                };
                let bytes = encode(&frame, body).unwrap();
                let (back, back_body) = decode(&bytes).unwrap();
                assert_eq!(back, frame);
                assert_eq!(&back_body[..], &body[..]);
            });
    }
}
