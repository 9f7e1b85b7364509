-- apply_shard.lua: apply.lua's block for a shard of a sharded board (R24,
-- docs/protocol.md §9), on when the apply config has the token "shard".
-- The tie key is then the store's time in µs, strictly increasing within
-- the shard (the shard's seq key, KEYS[2], holds the last one), so ties
-- across shards order by the time of reaching the score; and each applied
-- event's reply goes on with ";<new sorted-set member>;<old one>;<record
-- hash>" after its record, for the rank across shards and the record's
-- rewrite (rank/redisstore/shard_write.go, rerecord.lua). With the token
-- "norank" too (ack_rank none), the event's ranks are not read: the
-- record's rank is 0 (apply.lua's header), its seq is the tie key, which
-- the round's follow-up turns into the board's seq (shardseq.lua), and its
-- reply has no such tail, which only that rank's follow-up reads.
--
-- KEYS[2] <p>:{b#i}:seq  string: the shard's last tie key (µs)
-- ARGV[2] now in unix ms, or "" to read the server's TIME
if opt.shard then
  if opt.norank then ranked = false end
  -- The clock in µs, read once per call (the core's TIME): later events of
  -- the call go above it.
  local clockUs
  nextSeq = function()
    local last = S.seq
    if not last then last = tonumber(call('GET', KEYS[2]) or '0') end
    if not clockUs then
      if ARGV[2] ~= '' then
        clockUs = tonumber(ARGV[2]) * 1000
      else
        clockUs = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
      end
    end
    local us = clockUs
    if us <= last then us = last + 1 end
    S.seq, S.dirty = us, true
    return us
  end
  -- The tail serves the follow-up of ranked acks only (shard_write.go).
  entryTail = not opt.norank
end
