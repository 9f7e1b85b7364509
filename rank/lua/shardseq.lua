-- shardseq.lua: the board's seqs of events a sharded board applied on its
-- shards without reading ranks (ack_rank none, R24;
-- rank/redisstore/shard_write.go). A shard's step cannot move the board's
-- seq, which lives in the board's own slot, and the seq is taken only
-- after the step (so a read's seq covers what it shows); so the lane
-- round's follow-up gives the round's applied events their seqs here, in
-- one call per board, and keeps them for duplicates met later on any node
-- (R4: a duplicate answers the first result), in the hash of a minute,
-- <p>:{b}:q:<minute>, built from KEYS[1]'s prefix (same hash tag), which
-- expires ARGV[3] ms after the minute ends, past the life of any record.
--
-- An event's record names its round and its place in it (the attempt
-- token "<minute>:<round>:<place>", redisstore's roundToken). A round's
-- events take consecutive seqs, in the order of their places, kept in
-- one field per round: <round> = "<base>:<bits>", bit p (a character '1'
-- or '0') set when place p was applied, so the event at place p has seq
-- base + (bits set before p) + 1. An event's seq is given once, by
-- whichever call meets it first: when a duplicate of it comes before its
-- round's follow-up (a retry sent to another node meanwhile), or its
-- round gave it none (the applying call never heard its reply), it gets a
-- field of its own, <round>:<place> (decimal), and <round>! marks the
-- round, whose follow-up then gives each of its events such a field.
-- Records made before round tokens keep a field per event,
-- "<shard>.<tie µs>".
--
-- KEYS[1] <p>:{b}:seq  string: the board's change sequence
-- KEYS[3] unused (the prelude names it; not passed)
-- ARGV[1] unused
-- ARGV[2] now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3] how long a minute's hash outlives the minute, in ms
-- ARGV[4] the first entry's kind, then its arguments, then the next
--         entry's kind, and so on (the prelude's meanings of ARGV[3..5] do
--         not apply: none of its helpers but clockMs runs):
--           r <minute> <round> <bits>: a round's own applied events (all
--             of the board's in this call, before any other entry)
--           d <minute> <round> <place>: a duplicate of the event at place
--           l <minute> <field>: an event of a record without a round
-- ARGV[5] the first entry's minute (minutes since the epoch)
--
-- Returns per entry: r, the base (its events' seqs follow from its bits)
-- or, for a round marked with "!", the seqs of its set bits in order; d
-- and l, the event's seq.

local base = string.sub(KEYS[1], 1, -4) .. 'q:' -- KEYS[1] ends in "seq"
local call, keep, now = redis.call, tonumber(ARGV[3]), false

-- expire gives the hash of minute m its expiry, once.
local function expire(key, m)
  if call('PTTL', key) < 0 then
    now = now or clockMs()
    call('PEXPIRE', key, math.max(1, (m + 1) * 60000 + keep - now))
  end
end

-- give is the seq kept in field f of the hash of minute m, given now when
-- it has none.
local function give(key, m, f)
  local v = call('HGET', key, f)
  if v then return tonumber(v) end
  local seq = call('INCR', KEYS[1])
  call('HSET', key, f, seq)
  expire(key, m)
  return seq
end

-- ofRound is the seq of the event at place p of a round whose field
-- holds v, or nil when the round gave it none.
local function ofRound(v, p)
  local b, bits = string.match(v, '^(%d+):([01]*)$')
  if not b or string.sub(bits, p + 1, p + 1) ~= '1' then return nil end
  local _, before = string.gsub(string.sub(bits, 1, p), '1', '')
  return tonumber(b) + before + 1
end

local out, i = {}, 4
while i <= #ARGV do
  local kind, m = ARGV[i], ARGV[i + 1]
  local key = base .. m
  if kind == 'r' then
    local r, bits = ARGV[i + 2], ARGV[i + 3]
    local got = call('HMGET', key, r, r .. '!')
    if got[1] then
      -- Given already: this follow-up's pipeline was sent again.
      out[#out + 1] = tonumber(string.match(got[1], '^(%d+):'))
    elseif got[2] then
      local seqs = {}
      for p = 1, #bits do
        if string.sub(bits, p, p) == '1' then seqs[#seqs + 1] = give(key, m, r .. ':' .. (p - 1)) end
      end
      out[#out + 1] = seqs
    else
      local _, n = string.gsub(bits, '1', '')
      local first = call('INCRBY', KEYS[1], n) - n
      call('HSET', key, r, first .. ':' .. bits)
      expire(key, m)
      out[#out + 1] = first
    end
    i = i + 4
  elseif kind == 'd' then
    local r, p = ARGV[i + 2], ARGV[i + 3]
    local v = call('HGET', key, r)
    local seq = v and ofRound(v, tonumber(p))
    if not seq then
      seq = give(key, m, r .. ':' .. p)
      if not v then call('HSET', key, r .. '!', 1) end
    end
    out[#out + 1] = seq
    i = i + 4
  elseif kind == 'l' then
    out[#out + 1] = give(key, m, ARGV[i + 2])
    i = i + 3
  else
    return redis.error_reply('LB bad_request')
  end
end
return out
