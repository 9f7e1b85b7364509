package bus

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wsgateway/wsgateway/rank"
)

// The payload of <prefix>.changes.<board> is one board's changes, seq
// ascending, in a compact binary form: encoding/json costs several µs and
// four allocations per change to decode, and every node decodes every
// other node's changes (BenchmarkEncodeBatch).
//
//	message = 0x01 str(board) uvarint(count) change*count
//	change  = flags uvarint(seq) str(member) [varint(old)] varint(new)
//	          uvarint(rank) uvarint(prev_rank) [varint(period)] [str(name)]
//	          [str(cohort)] [str(region) uvarint(region_rank)] [str(region_from)]
//	flags   = 1: old present, 2: period present, 4: name present,
//	          8: cohort present (a cohort board's, §12: live frames route by it),
//	          16: region present (a region board's, §17: likewise),
//	          32: region_from present (the member left that region)
//	str     = uvarint(len) bytes
//
// Integers that should be non-negative still round-trip when they are not
// (uvarint of the two's complement). A payload starting with '[' is read as
// a JSON array of rank.Change instead, so tools and tests can inject readable
// messages.

const (
	codecV1     = 0x01
	flagOld     = 1
	flagPeriod  = 2
	flagName    = 4
	flagCohort  = 8
	flagRegion  = 16
	flagMoved   = 32
	minChangeSz = 6 // flags, seq, member length, new, rank, prev_rank
)

var errShort = errors.New("truncated")

// appendChanges encodes one board's batch (every change has that board).
func appendChanges(dst []byte, board string, batch []rank.Change) []byte {
	dst = append(dst, codecV1)
	dst = appendStr(dst, board)
	dst = binary.AppendUvarint(dst, uint64(len(batch)))
	for i := range batch {
		c := &batch[i]
		var flags byte
		if c.Old != nil {
			flags |= flagOld
		}
		if c.Period != 0 {
			flags |= flagPeriod
		}
		if c.Name != "" {
			flags |= flagName
		}
		if c.Cohort != "" {
			flags |= flagCohort
		}
		if c.Region != "" {
			flags |= flagRegion
		}
		if c.RegionFrom != "" {
			flags |= flagMoved
		}
		dst = append(dst, flags)
		dst = binary.AppendUvarint(dst, uint64(c.Seq))
		dst = appendStr(dst, c.Member)
		if c.Old != nil {
			dst = binary.AppendVarint(dst, *c.Old)
		}
		dst = binary.AppendVarint(dst, c.New)
		dst = binary.AppendUvarint(dst, uint64(c.Rank))
		dst = binary.AppendUvarint(dst, uint64(c.PrevRank))
		if c.Period != 0 {
			dst = binary.AppendVarint(dst, c.Period)
		}
		if c.Name != "" {
			dst = appendStr(dst, c.Name)
		}
		if c.Cohort != "" {
			dst = appendStr(dst, c.Cohort)
		}
		if c.Region != "" {
			dst = appendStr(dst, c.Region)
			dst = binary.AppendUvarint(dst, uint64(c.RegionRank))
		}
		if c.RegionFrom != "" {
			dst = appendStr(dst, c.RegionFrom)
		}
	}
	return dst
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decodeChanges decodes a payload; the result shares no memory with data.
func decodeChanges(data []byte) ([]rank.Change, error) {
	if len(data) > 0 && data[0] == '[' {
		var batch []rank.Change
		if err := json.Unmarshal(data, &batch); err != nil {
			return nil, fmt.Errorf("json: %w", err)
		}
		return batch, nil
	}
	if len(data) == 0 || data[0] != codecV1 {
		return nil, errors.New("unknown encoding")
	}
	d := decoder{b: data[1:]}
	board := d.str()
	n := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	if n > uint64(len(d.b)/minChangeSz) {
		return nil, fmt.Errorf("count %d exceeds payload", n)
	}
	batch := make([]rank.Change, n)
	olds := make([]int64, n) // one allocation for every Old pointer
	for i := range batch {
		c := &batch[i]
		c.Board = board
		flags := d.byte()
		c.Seq = int64(d.uvarint())
		c.Member = d.str()
		if flags&flagOld != 0 {
			olds[i] = d.varint()
			c.Old = &olds[i]
		}
		c.New = d.varint()
		c.Rank = int64(d.uvarint())
		c.PrevRank = int64(d.uvarint())
		if flags&flagPeriod != 0 {
			c.Period = d.varint()
		}
		if flags&flagName != 0 {
			c.Name = d.str()
		}
		if flags&flagCohort != 0 {
			c.Cohort = d.str()
		}
		if flags&flagRegion != 0 {
			c.Region = d.str()
			c.RegionRank = int64(d.uvarint())
			if c.Region == "" && d.err == nil {
				// The encoder sets the flag only for a region: a rank
				// without one would route nowhere.
				return nil, errors.New("region flag with no region")
			}
		}
		if flags&flagMoved != 0 {
			c.RegionFrom = d.str()
		}
		if flags&^(flagOld|flagPeriod|flagName|flagCohort|flagRegion|flagMoved) != 0 {
			return nil, fmt.Errorf("unknown flags %#x", flags)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return batch, nil
}

// decoder reads from b; the first error sticks and zero values follow it.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errShort
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
