//! Just enough of SentencePiece's `ModelProto` (protobuf) to tokenize.
//!
//! Hand-decoded rather than generated: the model needs six fields, and unknown
//! fields (the trainer's many settings) are skipped by wire type.

/// How a piece takes part in segmentation, from `SentencePiece.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PieceKind {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

impl PieceKind {
    fn from_proto(value: u64) -> Self {
        match value {
            2 => PieceKind::Unknown,
            3 => PieceKind::Control,
            4 => PieceKind::UserDefined,
            5 => PieceKind::Unused,
            6 => PieceKind::Byte,
            _ => PieceKind::Normal,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub text: String,
    pub score: f32,
    pub kind: PieceKind,
}

/// The parts of a `.model` file the tokenizer uses.
#[derive(Debug, Clone)]
pub(crate) struct SpModel {
    pub pieces: Vec<Piece>,
    pub bos_id: Option<u32>,
    pub eos_id: Option<u32>,
    pub precompiled_charsmap: Vec<u8>,
    pub add_dummy_prefix: bool,
    pub remove_extra_whitespaces: bool,
    pub escape_whitespaces: bool,
}

enum Value<'a> {
    Varint(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
    Other,
}

struct Fields<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn new(data: &'a [u8]) -> Self {
        Fields { data, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .data
                .get(self.pos)
                .ok_or_else(|| "truncated varint".to_string())?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| "truncated field".to_string())?;
        let slice = &self.data[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn next_field(&mut self) -> Result<Option<(u64, Value<'a>)>, String> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (field, wire) = (key >> 3, key & 7);
        let value = match wire {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Other
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "field too long")?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                let raw = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
            }
            w => return Err(format!("unsupported protobuf wire type {w}")),
        };
        Ok(Some((field, value)))
    }
}

impl SpModel {
    /// Decodes a serialized `ModelProto`.
    pub fn parse(data: &[u8]) -> Result<Self, String> {
        let mut model = SpModel {
            pieces: Vec::new(),
            bos_id: Some(1),
            eos_id: Some(2),
            precompiled_charsmap: Vec::new(),
            add_dummy_prefix: true,
            remove_extra_whitespaces: true,
            escape_whitespaces: true,
        };
        let mut top = Fields::new(data);
        while let Some((field, value)) = top.next_field()? {
            match (field, value) {
                (1, Value::Bytes(b)) => model.pieces.push(parse_piece(b)?),
                (2, Value::Bytes(b)) => model.parse_trainer_spec(b)?,
                (3, Value::Bytes(b)) => model.parse_normalizer_spec(b)?,
                _ => {}
            }
        }
        if model.pieces.is_empty() {
            return Err("model has no pieces".into());
        }
        Ok(model)
    }

    fn parse_trainer_spec(&mut self, data: &[u8]) -> Result<(), String> {
        // Ids are int32; -1 (disabled) arrives as a 64-bit two's complement varint.
        let as_id = |v: u64| u32::try_from(v as i64).ok();
        let mut fields = Fields::new(data);
        while let Some((field, value)) = fields.next_field()? {
            match (field, value) {
                (41, Value::Varint(v)) => self.bos_id = as_id(v),
                (42, Value::Varint(v)) => self.eos_id = as_id(v),
                _ => {}
            }
        }
        Ok(())
    }

    fn parse_normalizer_spec(&mut self, data: &[u8]) -> Result<(), String> {
        let mut fields = Fields::new(data);
        while let Some((field, value)) = fields.next_field()? {
            match (field, value) {
                (2, Value::Bytes(b)) => self.precompiled_charsmap = b.to_vec(),
                (3, Value::Varint(v)) => self.add_dummy_prefix = v != 0,
                (4, Value::Varint(v)) => self.remove_extra_whitespaces = v != 0,
                (5, Value::Varint(v)) => self.escape_whitespaces = v != 0,
                _ => {}
            }
        }
        Ok(())
    }
}

fn parse_piece(data: &[u8]) -> Result<Piece, String> {
    let mut piece = Piece {
        text: String::new(),
        score: 0.0,
        kind: PieceKind::Normal,
    };
    let mut fields = Fields::new(data);
    while let Some((field, value)) = fields.next_field()? {
        match (field, value) {
            (1, Value::Bytes(b)) => {
                piece.text = String::from_utf8(b.to_vec()).map_err(|_| "piece is not UTF-8")?;
            }
            (2, Value::Fixed32(bits)) => piece.score = f32::from_bits(bits),
            (3, Value::Varint(v)) => piece.kind = PieceKind::from_proto(v),
            _ => {}
        }
    }
    Ok(piece)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_bytes(field: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![(field << 3 | 2) as u8, payload.len() as u8];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn decodes_pieces_and_specs() {
        let mut piece = field_bytes(1, "▁a".as_bytes());
        piece.push(2 << 3 | 5);
        piece.extend_from_slice(&(-1.5f32).to_le_bytes());
        let mut unk = field_bytes(1, b"<unk>");
        unk.extend_from_slice(&[3 << 3, 2]);

        let mut data = field_bytes(1, &unk);
        data.extend(field_bytes(1, &piece));
        // trainer_spec.eos_id = -1 (field 42 needs a two-byte key)
        let mut trainer = vec![0xd0, 0x02];
        trainer.extend_from_slice(&[0xff; 9]);
        trainer.push(0x01);
        data.extend(field_bytes(2, &trainer));
        // normalizer_spec: charsmap "xy", add_dummy_prefix = false
        let mut norm = field_bytes(2, b"xy");
        norm.extend_from_slice(&[3 << 3, 0]);
        data.extend(field_bytes(3, &norm));

        let model = SpModel::parse(&data).unwrap();
        assert_eq!(model.pieces.len(), 2);
        assert_eq!(model.pieces[0].kind, PieceKind::Unknown);
        assert_eq!(model.pieces[1].text, "▁a");
        assert_eq!(model.pieces[1].score, -1.5);
        assert_eq!(model.bos_id, Some(1));
        assert_eq!(model.eos_id, None);
        assert_eq!(model.precompiled_charsmap, b"xy");
        assert!(!model.add_dummy_prefix);
        assert!(model.remove_extra_whitespaces);
    }

    #[test]
    fn rejects_truncated_data() {
        assert!(SpModel::parse(&[0x0a, 0x05, 0x01]).is_err());
        assert!(SpModel::parse(&[]).is_err());
    }
}
