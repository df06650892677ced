//! A reader of the Thrift compact protocol over untrusted bytes (Apache Thrift,
//! `thrift-compact-protocol.md`), shared by the filter header's reader (`header.rs`), the
//! footer's skim and checks (`footer/`) and the page checks: every length is checked against
//! the bytes left, every count of a container against the bytes its elements need, nesting is
//! bounded, and a value it cannot read is a [`ThriftError`], never a panic or an allocation
//! sized by the bytes.

use std::fmt;

// Thrift compact protocol type ids.
pub(super) const T_STOP: u8 = 0;
pub(super) const T_TRUE: u8 = 1;
pub(super) const T_FALSE: u8 = 2;
pub(super) const T_BYTE: u8 = 3;
pub(super) const T_I16: u8 = 4;
pub(super) const T_I32: u8 = 5;
pub(super) const T_I64: u8 = 6;
pub(super) const T_DOUBLE: u8 = 7;
pub(super) const T_BINARY: u8 = 8;
pub(super) const T_LIST: u8 = 9;
pub(super) const T_SET: u8 = 10;
pub(super) const T_MAP: u8 = 11;
pub(super) const T_STRUCT: u8 = 12;

/// Why bytes could not be read as compact Thrift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ThriftError {
    /// The bytes end inside a value (or a container claims more elements than bytes left).
    Truncated,
    /// A varint's tenth byte carries bits beyond 64.
    VarintOverflow,
    /// A varint of more than 10 bytes.
    VarintTooLong,
    /// A byte whose type nibble is stop but whose field delta is not zero.
    StopByte(u8),
    /// A field id (explicit form) outside `i16`.
    FieldIdRange(i64),
    /// A field id delta past `i16::MAX`.
    FieldIdOverflow,
    /// A type id the protocol does not define.
    UnknownType(u8),
    /// Structs and containers nested deeper than the reader's bound.
    TooDeep,
    /// A container of booleans, where the reader is told to refuse them.
    BoolContainer,
    /// A union member that is not a struct (its field id).
    UnionMemberNotStruct(i16),
    /// A union with two members.
    UnionOfTwo,
    /// A union without a member.
    EmptyUnion,
}

impl fmt::Display for ThriftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThriftError::Truncated => write!(f, "truncated"),
            ThriftError::VarintOverflow => write!(f, "varint overflows 64 bits"),
            ThriftError::VarintTooLong => write!(f, "varint longer than 10 bytes"),
            ThriftError::StopByte(b) => write!(f, "stop byte {b:#04x}"),
            ThriftError::FieldIdRange(id) => write!(f, "field id {id} out of range"),
            ThriftError::FieldIdOverflow => write!(f, "field id overflows"),
            ThriftError::UnknownType(t) => write!(f, "unknown type id {t}"),
            ThriftError::TooDeep => write!(f, "nested too deeply"),
            ThriftError::BoolContainer => write!(f, "a container of booleans"),
            ThriftError::UnionMemberNotStruct(id) => write!(f, "member {id} is not a struct"),
            ThriftError::UnionOfTwo => write!(f, "a union with two members"),
            ThriftError::EmptyUnion => write!(f, "an empty union"),
        }
    }
}

pub(super) type Read<T> = Result<T, ThriftError>;

/// How the elements of a container of booleans are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BoolElements {
    /// One byte each, as the protocol writes them.
    Bytes,
    /// Refused: the `parquet` crate (60.x) skips such an element without reading its byte,
    /// so it and this reader would part ways there (and its skip then loops up to 2³¹ times
    /// on a list header of six bytes). No field of a footer holds one.
    Refused,
}

/// A compact-protocol reader over `bytes`.
pub(super) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    max_depth: usize,
    bools: BoolElements,
}

impl<'a> Reader<'a> {
    /// A reader of `b` from its start that follows nesting `max_depth` deep.
    pub(super) fn new(b: &'a [u8], max_depth: usize, bools: BoolElements) -> Self {
        Reader {
            b,
            at: 0,
            max_depth,
            bools,
        }
    }

    /// Bytes read so far.
    #[inline]
    pub(super) fn position(&self) -> usize {
        self.at
    }

    #[inline]
    pub(super) fn byte(&mut self) -> Read<u8> {
        let v = *self.b.get(self.at).ok_or(ThriftError::Truncated)?;
        self.at += 1;
        Ok(v)
    }

    /// Bytes left.
    #[inline]
    pub(super) fn left(&self) -> usize {
        self.b.len() - self.at
    }

    #[inline]
    pub(super) fn skip(&mut self, n: u64) -> Read<()> {
        if n > self.left() as u64 {
            return Err(ThriftError::Truncated);
        }
        self.at += n as usize;
        Ok(())
    }

    /// An unsigned LEB128 varint of at most 10 bytes.
    #[inline]
    pub(super) fn varint(&mut self) -> Read<u64> {
        // most varints of a footer take one byte
        if let Some(&b) = self.b.get(self.at) {
            if b < 0x80 {
                self.at += 1;
                return Ok(u64::from(b));
            }
        }
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return Err(ThriftError::VarintOverflow);
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(ThriftError::VarintTooLong)
    }

    /// A zigzag varint (`i16`, `i32` and `i64` alike).
    #[inline]
    pub(super) fn zigzag(&mut self) -> Read<i64> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// A binary (or string): its bytes.
    pub(super) fn binary(&mut self) -> Read<&'a [u8]> {
        let n = self.varint()?;
        let start = self.at;
        self.skip(n)?;
        Ok(&self.b[start..self.at])
    }

    /// The next field header: `None` at the struct's stop byte, else (field id, type).
    #[inline]
    pub(super) fn field(&mut self, last_id: &mut i16) -> Read<Option<(i16, u8)>> {
        let b = self.byte()?;
        let ty = b & 0x0f;
        if ty == T_STOP {
            if b != 0 {
                return Err(ThriftError::StopByte(b));
            }
            return Ok(None);
        }
        let delta = b >> 4;
        let id = if delta == 0 {
            let id = self.zigzag()?;
            i16::try_from(id).map_err(|_| ThriftError::FieldIdRange(id))?
        } else {
            last_id
                .checked_add(i16::from(delta))
                .ok_or(ThriftError::FieldIdOverflow)?
        };
        *last_id = id;
        Ok(Some((id, ty)))
    }

    /// Skip one value of type `ty` at nesting `depth`.
    pub(super) fn skip_value(&mut self, ty: u8, depth: usize) -> Read<()> {
        if depth > self.max_depth {
            return Err(ThriftError::TooDeep);
        }
        match ty {
            T_TRUE | T_FALSE => Ok(()),
            T_BYTE => self.skip(1),
            T_I16 | T_I32 | T_I64 => self.varint().map(|_| ()),
            T_DOUBLE => self.skip(8),
            T_BINARY => {
                let n = self.varint()?;
                self.skip(n)
            }
            T_LIST | T_SET => {
                let (elem, n) = self.list()?;
                for _ in 0..n {
                    self.element(elem, depth)?;
                }
                Ok(())
            }
            T_MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                // every element takes at least one byte
                if n.saturating_mul(2) > self.left() as u64 {
                    return Err(ThriftError::Truncated);
                }
                for _ in 0..n {
                    self.element(kv >> 4, depth)?;
                    self.element(kv & 0x0f, depth)?;
                }
                Ok(())
            }
            T_STRUCT => self.skip_struct(depth + 1),
            other => Err(ThriftError::UnknownType(other)),
        }
    }

    /// One element of a container (booleans take a byte each there, or are refused).
    #[inline]
    fn element(&mut self, ty: u8, depth: usize) -> Read<()> {
        match (ty, self.bools) {
            (T_TRUE | T_FALSE, BoolElements::Bytes) => self.skip(1),
            (T_TRUE | T_FALSE, BoolElements::Refused) => Err(ThriftError::BoolContainer),
            (t, _) => self.skip_value(t, depth + 1),
        }
    }

    /// Skip the fields of a struct, through its stop byte.
    pub(super) fn skip_struct(&mut self, depth: usize) -> Read<()> {
        let mut last = 0i16;
        while let Some((_, ty)) = self.field(&mut last)? {
            self.skip_value(ty, depth)?;
        }
        Ok(())
    }

    /// A list or set header: (element type, count), the count bounded by the bytes left
    /// (every element takes at least one byte).
    #[inline]
    pub(super) fn list(&mut self) -> Read<(u8, usize)> {
        let h = self.byte()?;
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if n > self.left() as u64 {
            return Err(ThriftError::Truncated);
        }
        Ok((h & 0x0f, n as usize))
    }

    /// A union whose members are structs: its one member's field id (the member skipped).
    pub(super) fn union_member(&mut self) -> Read<i16> {
        let mut last = 0i16;
        let mut member = None;
        while let Some((id, ty)) = self.field(&mut last)? {
            if ty != T_STRUCT {
                return Err(ThriftError::UnionMemberNotStruct(id));
            }
            if member.replace(id).is_some() {
                return Err(ThriftError::UnionOfTwo);
            }
            self.skip_struct(1)?;
        }
        member.ok_or(ThriftError::EmptyUnion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_zigzags_and_their_bounds() {
        let mut r = Reader::new(&[0x96, 0x01, 0x03, 0x04], 8, BoolElements::Bytes);
        assert_eq!(r.varint(), Ok(150));
        assert_eq!(r.zigzag(), Ok(-2));
        assert_eq!(r.zigzag(), Ok(2));
        assert_eq!(r.varint(), Err(ThriftError::Truncated));
        let mut over = [0xff; 10];
        over[9] = 0x02;
        let mut r = Reader::new(&over, 8, BoolElements::Bytes);
        assert_eq!(r.varint(), Err(ThriftError::VarintOverflow));
        let mut max = [0xff; 10];
        max[9] = 0x01;
        assert_eq!(
            Reader::new(&max, 8, BoolElements::Bytes).varint(),
            Ok(u64::MAX)
        );
        assert_eq!(
            Reader::new(&[0x80; 11], 8, BoolElements::Bytes).varint(),
            Err(ThriftError::VarintOverflow)
        );
    }

    #[test]
    fn fields_and_stop_bytes() {
        // field 1 i32, field 3 (delta 2) binary, explicit field 300 i64, stop
        let b = [0x15, 0x02, 0x28, 0x01, b'x', 0x06, 0xd8, 0x04, 0x02, 0x00];
        let mut r = Reader::new(&b, 8, BoolElements::Bytes);
        let mut last = 0;
        assert_eq!(r.field(&mut last), Ok(Some((1, T_I32))));
        assert_eq!(r.zigzag(), Ok(1));
        assert_eq!(r.field(&mut last), Ok(Some((3, T_BINARY))));
        assert_eq!(r.binary(), Ok(&b"x"[..]));
        assert_eq!(r.field(&mut last), Ok(Some((300, T_I64))));
        assert_eq!(r.zigzag(), Ok(1));
        assert_eq!(r.field(&mut last), Ok(None));
        assert_eq!(r.position(), b.len());
        // a stop nibble with a delta is not a stop byte
        let mut last = 0;
        assert_eq!(
            Reader::new(&[0x10], 8, BoolElements::Bytes).field(&mut last),
            Err(ThriftError::StopByte(0x10))
        );
        // an explicit id beyond i16
        let mut last = 0;
        assert_eq!(
            Reader::new(&[0x05, 0x80, 0x80, 0x04], 8, BoolElements::Bytes).field(&mut last),
            Err(ThriftError::FieldIdRange(32768))
        );
        let mut last = i16::MAX;
        assert_eq!(
            Reader::new(&[0x15], 8, BoolElements::Bytes).field(&mut last),
            Err(ThriftError::FieldIdOverflow)
        );
    }

    #[test]
    fn containers_are_bounded_by_their_bytes_and_depth() {
        // a list of 100 i32 in 3 bytes
        let b = [0xf5, 0x64, 0x00];
        let mut r = Reader::new(&b, 8, BoolElements::Bytes);
        assert_eq!(r.skip_value(T_LIST, 0), Err(ThriftError::Truncated));
        // a map of 2 (i32, i32) in 5 bytes; then one of 3 in the same
        let mut r = Reader::new(
            &[0x02, 0x55, 0x02, 0x04, 0x06, 0x08],
            8,
            BoolElements::Bytes,
        );
        assert_eq!(r.skip_value(T_MAP, 0), Ok(()));
        let mut r = Reader::new(
            &[0x03, 0x55, 0x02, 0x04, 0x06, 0x08],
            8,
            BoolElements::Bytes,
        );
        assert_eq!(r.skip_value(T_MAP, 0), Err(ThriftError::Truncated));
        // a list of two booleans: a byte each, or refused
        let b = [0x21, 0x01, 0x02];
        let mut r = Reader::new(&b, 8, BoolElements::Bytes);
        assert_eq!(r.skip_value(T_LIST, 0), Ok(()));
        assert_eq!(r.left(), 0);
        let mut r = Reader::new(&b, 8, BoolElements::Refused);
        assert_eq!(r.skip_value(T_LIST, 0), Err(ThriftError::BoolContainer));
        // structs nested deeper than the bound
        let mut deep = vec![0x1c; 10];
        deep.extend([0u8; 11]);
        let mut r = Reader::new(&deep, 4, BoolElements::Bytes);
        assert_eq!(r.skip_struct(0), Err(ThriftError::TooDeep));
        let mut r = Reader::new(&deep, 16, BoolElements::Bytes);
        assert_eq!(r.skip_struct(0), Ok(()));
        assert_eq!(
            Reader::new(&[0x0d], 8, BoolElements::Bytes).skip_value(13, 0),
            Err(ThriftError::UnknownType(13))
        );
    }

    #[test]
    fn unions() {
        let one = [0x1c, 0x00, 0x00];
        assert_eq!(
            Reader::new(&one, 8, BoolElements::Bytes).union_member(),
            Ok(1)
        );
        assert_eq!(
            Reader::new(&[0x00], 8, BoolElements::Bytes).union_member(),
            Err(ThriftError::EmptyUnion)
        );
        assert_eq!(
            Reader::new(&[0x1c, 0x00, 0x1c, 0x00, 0x00], 8, BoolElements::Bytes).union_member(),
            Err(ThriftError::UnionOfTwo)
        );
        assert_eq!(
            Reader::new(&[0x15, 0x00, 0x00], 8, BoolElements::Bytes).union_member(),
            Err(ThriftError::UnionMemberNotStruct(1))
        );
    }
}
