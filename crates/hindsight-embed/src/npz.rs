//! Reader for NumPy `.npy` arrays and `.npz` archives of them.
//!
//! Only what model weights need: little- or big-endian integers and floats in
//! C order. Object arrays (pickles) are refused rather than interpreted.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::EmbedError;

/// Element storage of an array, converted to native byte order.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    U8(Vec<u8>),
    I8(Vec<i8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// One array: its shape (empty for a scalar) and row-major data.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: NpyData,
}

impl NpyArray {
    /// Number of elements the shape describes.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the array holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parses the bytes of a `.npy` file.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let (header, data_start) = parse_header(bytes)?;
        let count: usize = header.shape.iter().product();
        let data = decode(&header.descr, &bytes[data_start..], count)?;
        Ok(NpyArray {
            shape: header.shape,
            data,
        })
    }
}

/// Parses the magic, version and header dict; returns the header and where
/// the data starts.
fn parse_header(bytes: &[u8]) -> Result<(Header, usize), String> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("not a .npy file (bad magic)".into());
    }
    let major = bytes[6];
    let (header_len, header_start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err("truncated .npy header".into());
            }
            let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            (len as usize, 12)
        }
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    let data_start = header_start + header_len;
    if bytes.len() < data_start {
        return Err("truncated .npy header".into());
    }
    let header = std::str::from_utf8(&bytes[header_start..data_start])
        .map_err(|_| "non-UTF-8 .npy header".to_string())?;
    let header = Header::parse(header)?;
    if header.fortran_order && header.shape.len() > 1 {
        return Err("Fortran-ordered arrays are not supported".into());
    }
    Ok((header, data_start))
}

struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

impl Header {
    /// Parses the Python dict literal NumPy writes, e.g.
    /// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
    fn parse(text: &str) -> Result<Self, String> {
        let value_after = |key: &str| -> Result<&str, String> {
            let quoted = format!("'{key}'");
            let at = text
                .find(&quoted)
                .ok_or_else(|| format!(".npy header has no {key}"))?;
            let rest = &text[at + quoted.len()..];
            let colon = rest
                .find(':')
                .ok_or_else(|| format!(".npy header: no value for {key}"))?;
            Ok(rest[colon + 1..].trim_start())
        };

        let descr_text = value_after("descr")?;
        let descr = descr_text
            .strip_prefix('\'')
            .and_then(|s| s.split('\'').next())
            .ok_or_else(|| "only simple dtypes are supported".to_string())?
            .to_string();

        let fortran_order = value_after("fortran_order")?.starts_with("True");

        let shape_text = value_after("shape")?;
        let inner = shape_text
            .strip_prefix('(')
            .and_then(|s| s.split(')').next())
            .ok_or_else(|| ".npy header: malformed shape".to_string())?;
        let shape = inner
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.trim_end_matches('L')
                    .parse::<usize>()
                    .map_err(|_| format!(".npy header: bad dimension {s:?}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Header {
            descr,
            fortran_order,
            shape,
        })
    }
}

fn decode(descr: &str, body: &[u8], count: usize) -> Result<NpyData, String> {
    let (order, kind) = descr.split_at(1.min(descr.len()));
    let big = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return Err(format!("unsupported dtype {descr:?}")),
    };
    let need = |size: usize| -> Result<&[u8], String> {
        let n = count
            .checked_mul(size)
            .ok_or_else(|| "array too large".to_string())?;
        body.get(..n)
            .ok_or_else(|| format!("truncated data: need {n} bytes, have {}", body.len()))
    };
    macro_rules! words {
        ($ty:ty, $n:expr) => {{
            need($n)?
                .chunks_exact($n)
                .map(|c| {
                    let mut raw = [0u8; $n];
                    raw.copy_from_slice(c);
                    if big {
                        <$ty>::from_be_bytes(raw)
                    } else {
                        <$ty>::from_le_bytes(raw)
                    }
                })
                .collect()
        }};
    }
    Ok(match kind {
        "u1" => NpyData::U8(need(1)?.to_vec()),
        "i1" => NpyData::I8(need(1)?.iter().map(|&b| b as i8).collect()),
        "i4" => NpyData::I32(words!(i32, 4)),
        "i8" => NpyData::I64(words!(i64, 8)),
        "f4" => NpyData::F32(words!(f32, 4)),
        "f8" => NpyData::F64(words!(f64, 8)),
        _ => return Err(format!("unsupported dtype {descr:?}")),
    })
}

/// An open `.npz` archive; arrays are decoded on demand.
pub struct Npz {
    path: PathBuf,
    archive: zip::ZipArchive<BufReader<File>>,
}

impl Npz {
    /// Opens the archive at `path`.
    pub fn open(path: &Path) -> Result<Self, EmbedError> {
        let file = File::open(path).map_err(|e| EmbedError::io("cannot open", path, e))?;
        let archive = zip::ZipArchive::new(BufReader::new(file))
            .map_err(|e| EmbedError::invalid(path, format!("not a zip archive: {e}")))?;
        Ok(Npz {
            path: path.to_path_buf(),
            archive,
        })
    }

    /// Names of the arrays in the archive, without the `.npy` suffix.
    pub fn names(&self) -> Vec<String> {
        self.archive
            .file_names()
            .map(|n| n.strip_suffix(".npy").unwrap_or(n).to_string())
            .collect()
    }

    /// Decodes the array called `name`.
    pub fn array(&mut self, name: &str) -> Result<NpyArray, EmbedError> {
        let entry_name = format!("{name}.npy");
        let mut entry = self
            .archive
            .by_name(&entry_name)
            .map_err(|e| EmbedError::invalid(&self.path, format!("array {name}: {e}")))?;
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| EmbedError::invalid(&self.path, format!("array {name}: {e}")))?;
        NpyArray::parse(&bytes)
            .map_err(|reason| EmbedError::invalid(&self.path, format!("array {name}: {reason}")))
    }

    /// The shape of array `name`, read from its header without decoding data.
    pub fn shape(&mut self, name: &str) -> Result<Vec<usize>, EmbedError> {
        let entry_name = format!("{name}.npy");
        let entry = self
            .archive
            .by_name(&entry_name)
            .map_err(|e| EmbedError::invalid(&self.path, format!("array {name}: {e}")))?;
        // Headers are padded to 64 bytes and at most a few hundred long.
        let mut head = Vec::with_capacity(1024);
        entry
            .take(4096)
            .read_to_end(&mut head)
            .map_err(|e| EmbedError::invalid(&self.path, format!("array {name}: {e}")))?;
        let (header, _) = parse_header(&head)
            .map_err(|reason| EmbedError::invalid(&self.path, format!("array {name}: {reason}")))?;
        Ok(header.shape)
    }

    /// Decodes `name` as `f32` values with exactly the given shape.
    pub fn f32_array(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let array = self.array(name)?;
        self.check_shape(name, &array, shape)?;
        match array.data {
            NpyData::F32(v) => Ok(v),
            NpyData::F64(v) => Ok(v.into_iter().map(|x| x as f32).collect()),
            other => Err(self.wrong_type(name, "float", &other)),
        }
    }

    /// Decodes `name` as `u8` values with exactly the given shape.
    pub fn u8_array(&mut self, name: &str, shape: &[usize]) -> Result<Vec<u8>, EmbedError> {
        let array = self.array(name)?;
        self.check_shape(name, &array, shape)?;
        match array.data {
            NpyData::U8(v) => Ok(v),
            other => Err(self.wrong_type(name, "uint8", &other)),
        }
    }

    /// Decodes a single number stored as a scalar or one-element array.
    pub fn scalar_f64(&mut self, name: &str) -> Result<f64, EmbedError> {
        let array = self.array(name)?;
        if array.len() != 1 {
            return Err(EmbedError::invalid(
                &self.path,
                format!(
                    "array {name}: expected one value, found shape {:?}",
                    array.shape
                ),
            ));
        }
        Ok(match array.data {
            NpyData::U8(v) => v[0] as f64,
            NpyData::I8(v) => v[0] as f64,
            NpyData::I32(v) => v[0] as f64,
            NpyData::I64(v) => v[0] as f64,
            NpyData::F32(v) => v[0] as f64,
            NpyData::F64(v) => v[0],
        })
    }

    fn check_shape(&self, name: &str, array: &NpyArray, shape: &[usize]) -> Result<(), EmbedError> {
        if array.shape != shape {
            return Err(EmbedError::invalid(
                &self.path,
                format!(
                    "array {name}: expected shape {shape:?}, found {:?}",
                    array.shape
                ),
            ));
        }
        Ok(())
    }

    fn wrong_type(&self, name: &str, expected: &str, found: &NpyData) -> EmbedError {
        let found = match found {
            NpyData::U8(_) => "uint8",
            NpyData::I8(_) => "int8",
            NpyData::I32(_) => "int32",
            NpyData::I64(_) => "int64",
            NpyData::F32(_) => "float32",
            NpyData::F64(_) => "float64",
        };
        EmbedError::invalid(
            &self.path,
            format!("array {name}: expected {expected} data, found {found}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn parses_f32_matrix() {
        let body: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let a = NpyArray::parse(&npy("<f4", "(2, 3)", &body)).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.data, NpyData::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    }

    #[test]
    fn parses_scalar_and_big_endian() {
        let a = NpyArray::parse(&npy("<f8", "()", &1e-12f64.to_le_bytes())).unwrap();
        assert!(a.shape.is_empty());
        assert_eq!(a.len(), 1);
        assert_eq!(a.data, NpyData::F64(vec![1e-12]));

        let b = NpyArray::parse(&npy(">i4", "(1,)", &7i32.to_be_bytes())).unwrap();
        assert_eq!(b.data, NpyData::I32(vec![7]));
    }

    #[test]
    fn rejects_truncated_and_pickled() {
        assert!(NpyArray::parse(&npy("<f4", "(4,)", &[0; 8])).is_err());
        assert!(NpyArray::parse(&npy("|O", "(1,)", &[0; 8])).is_err());
        assert!(NpyArray::parse(b"PK\x03\x04").is_err());
    }

    #[test]
    fn reads_arrays_from_npz() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.npz");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("q1.npy", options).unwrap();
        zip.write_all(&npy("|u1", "(2, 2)", &[1, 2, 3, 4])).unwrap();
        zip.start_file("eps.npy", options).unwrap();
        zip.write_all(&npy("<f8", "()", &0.5f64.to_le_bytes()))
            .unwrap();
        zip.finish().unwrap();

        let mut npz = Npz::open(&path).unwrap();
        let mut names = npz.names();
        names.sort();
        assert_eq!(names, vec!["eps", "q1"]);
        assert_eq!(npz.u8_array("q1", &[2, 2]).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(npz.scalar_f64("eps").unwrap(), 0.5);
        let err = npz.u8_array("q1", &[4]).unwrap_err().to_string();
        assert!(err.contains("expected shape [4]"), "{err}");
        assert!(npz.array("missing").is_err());
    }
}
