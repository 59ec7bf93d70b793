//! Reading what a test's stand-in HTTP endpoint (a scripted chat model, an embedding server)
//! receives. Shared by the node's and the API's integration tests.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

/// The JSON body of one HTTP request on `stream`.
pub fn read_json_request(stream: &TcpStream) -> serde_json::Value {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}
