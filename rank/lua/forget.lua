-- forget.lua: one bounded, resumable step of an erasure over one bucket hash
-- of idempotency records (docs/protocol.md §13, R29): delete the member's
-- records (fields "<member>|<id>") met in up to ARGV[8] HSCAN steps of
-- ARGV[7] fields each, from the cursor the erasure's progress hash keeps
-- for this bucket, and keep the new cursor there (or "done"), so a bucket
-- of millions of records takes many short calls, none near the store's
-- timeout, and an erasure cut short resumes where it stopped. It uses none
-- of the prelude's helpers, whose KEYS[1] is a cfg hash.
--
-- KEYS[1] <p>:{b}..:r:<W>.<k>  a bucket hash of idempotency records
-- KEYS[2] <p>:{b}..:er:<hash of the member>  the erasure's progress hash in
--         this key space (erase.lua): r += the records deleted, and
--         ARGV[9] = the bucket's HSCAN cursor, or "done"
-- KEYS[3] unused (the prelude names it; not passed)
-- ARGV[1] unused (the prelude names ARGV[1..5]: none of its helpers runs)
-- ARGV[2] unused
-- ARGV[3] unused
-- ARGV[4] unused
-- ARGV[5] unused
-- ARGV[6] the HSCAN MATCH pattern: the member's fields, "<member>|*", the
--         member glob-escaped
-- ARGV[7] COUNT of each HSCAN step
-- ARGV[8] HSCAN steps, at most, in this call
-- ARGV[9] the bucket's field in the progress hash ("b:<W>.<k>")
-- ARGV[10] the progress hash's lifetime (ms)
--
-- Returns {records deleted, 1 when the bucket is done else 0}.

local cursor = redis.call('HGET', KEYS[2], ARGV[9])
if cursor == 'done' then return {0, 1} end
cursor = cursor or '0'
local n = 0
for _ = 1, tonumber(ARGV[8]) do
  local r = redis.call('HSCAN', KEYS[1], cursor, 'MATCH', ARGV[6], 'COUNT', ARGV[7])
  cursor = r[1]
  local fields = r[2]
  for i = 1, #fields, 2 do n = n + redis.call('HDEL', KEYS[1], fields[i]) end
  if cursor == '0' then break end
end
local done = cursor == '0'
if n > 0 then redis.call('HINCRBY', KEYS[2], 'r', n) end
redis.call('HSET', KEYS[2], ARGV[9], done and 'done' or cursor)
redis.call('PEXPIRE', KEYS[2], ARGV[10])
return {n, done and 1 or 0}
