//! Low-level protobuf wire-format reading: varints, tags and
//! length-delimited slices, with every length checked against the input
//! (nothing is allocated from a length prefix).

use crate::error::WireError;

/// Protobuf wire types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    Fixed32,
}

impl WireType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            WireType::Varint => "varint",
            WireType::Fixed64 => "fixed64",
            WireType::Len => "length-delimited",
            WireType::Fixed32 => "fixed32",
        }
    }
}

/// One field occurrence read from the wire.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WireValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    /// No Kubernetes field is fixed32; the value is skipped.
    Fixed32,
}

impl WireValue<'_> {
    pub(crate) fn wire_type(&self) -> WireType {
        match self {
            WireValue::Varint(_) => WireType::Varint,
            WireValue::Fixed64(_) => WireType::Fixed64,
            WireValue::Len(_) => WireType::Len,
            WireValue::Fixed32 => WireType::Fixed32,
        }
    }
}

/// A cursor over one message's bytes.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads a base-128 varint (at most 10 bytes, like Go's decoder).
    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(WireError::Truncated);
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::VarintOverflow)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or(WireError::Truncated)?;
        let slice = self.buf.get(self.pos..end).ok_or(WireError::Truncated)?;
        self.pos = end;
        Ok(slice)
    }

    /// Reads the next `(field number, value)`, or `None` at the end.
    pub(crate) fn field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, WireError> {
        if self.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(WireError::BadFieldNumber(number));
        }
        let number = number as u32;
        let value = match key & 7 {
            0 => WireValue::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                WireValue::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| WireError::Truncated)?;
                WireValue::Len(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                WireValue::Fixed32
            }
            other => return Err(WireError::UnsupportedWireType(other as u8)),
        };
        Ok(Some((number, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_roundtrip_and_limits() {
        let mut r = Reader::new(&[0xac, 0x02]);
        assert_eq!(r.varint().ok(), Some(300));
        let mut r = Reader::new(&[0xff; 11]);
        assert!(matches!(r.varint(), Err(WireError::VarintOverflow)));
        let mut r = Reader::new(&[0x80]);
        assert!(matches!(r.varint(), Err(WireError::Truncated)));
        // -1 as int64 is ten bytes.
        let mut bytes = vec![0xff; 9];
        bytes.push(0x01);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.varint().ok(), Some(u64::MAX));
    }

    #[test]
    fn huge_length_prefix_is_truncation_not_allocation() {
        // field 1, LEN, length 2^62
        let bytes = [0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40];
        let mut r = Reader::new(&bytes);
        assert!(matches!(r.field(), Err(WireError::Truncated)));
    }

    #[test]
    fn groups_and_field_zero_rejected() {
        assert!(matches!(
            Reader::new(&[0x0b]).field(),
            Err(WireError::UnsupportedWireType(3))
        ));
        assert!(matches!(
            Reader::new(&[0x00, 0x00]).field(),
            Err(WireError::BadFieldNumber(0))
        ));
    }
}
