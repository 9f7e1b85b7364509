-- rerecord.lua: replace an idempotency record that exists, as SET XX did
-- for a key per record (a sharded board's follow-up writes the global
-- result into the record its shard wrote; rank/redisstore/shard.go). A
-- record gone meanwhile (its bucket expired) is not written again, so no
-- bucket hash is ever left without its expiry. It uses none of the
-- prelude's helpers, whose KEYS[1] is a cfg hash.
--
-- KEYS[1] <p>:{b#s}:r:<W>.<k>  the record's bucket hash (prelude's records)
-- KEYS[3] unused (the prelude names it; not passed)
-- ARGV[1] the record's field "<m>|<id>"
-- ARGV[2] the new record
-- ARGV[3] unused (the prelude names ARGV[3..5]; not passed)
-- ARGV[4] unused
-- ARGV[5] unused
--
-- Returns 1 when the record was replaced, 0 when there was none.

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
