-- prelude.lua: the checks and helpers scripts share; lua.Source puts this
-- header and the helpers a script calls (and those they call) before it.
-- A helper is the comment lines above a "local function" line and its
-- code, down to the next helper's comment; it calls only helpers above it.
-- Every script's header gives these KEYS and ARGV the same meaning:
--
-- KEYS[1] <p>:{b}:cfg  hash: v = config version
-- KEYS[3] <p>:{b}:n    hash: member id -> display name
--
-- ARGV[1] config version the caller resolved the keys with
-- ARGV[2] now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3] start of slot A (unix ms)
-- ARGV[4] boundary: end of A = start of B (unix ms); 0 = no periods, always A
-- ARGV[5] end of slot B (unix ms)

-- refused is the error reply for a board that is gone or whose config
-- version is not the caller's, else nil.
local function refused()
  local ver = redis.call('HGET', KEYS[1], 'v')
  if not ver then return redis.error_reply('LB unknown_board') end
  if ver ~= ARGV[1] then return redis.error_reply('LB stale') end
  return nil
end

-- slotNow is the slot the clock falls in (1 = A, 2 = B) and the clock in
-- unix ms (0 on a board without periods, always A); nil when the clock is
-- outside both slots (the caller's estimate of it was off).
local function slotNow()
  local boundary = tonumber(ARGV[4])
  if boundary <= 0 then return 1, 0 end
  local now
  if ARGV[2] ~= '' then
    now = tonumber(ARGV[2])
  else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  if now < tonumber(ARGV[3]) or now >= tonumber(ARGV[5]) then return nil end
  if now >= boundary then return 2, now end
  return 1, now
end

-- hmgetList is hash key's values of fields (false when none), read with
-- HMGET in chunks so no unpack grows past Lua's stack limit.
local function hmgetList(key, fields)
  local out = {}
  for i = 1, #fields, 500 do
    local part = redis.call('HMGET', key, unpack(fields, i, math.min(i + 499, #fields)))
    for j = 1, #part do out[i + j - 1] = part[j] end
  end
  return out
end

-- idsNames splits a ZREVRANGE ... WITHSCORES reply into member ids (the
-- "<16 digits>|" tie prefix cut off) and their names ("" when none).
local function idsNames(r)
  local ids = {}
  for i = 1, #r, 2 do
    local id = r[i]
    if string.sub(id, 17, 17) == '|' then id = string.sub(id, 18) end
    ids[#ids + 1] = id
  end
  local names = hmgetList(KEYS[3], ids)
  for i = 1, #ids do names[i] = names[i] or '' end
  return ids, names
end

-- metasOf reads the meta (§11) of member ids from hash ekey, "" when none.
local function metasOf(ekey, ids)
  local out = {}
  if #ids > 0 and redis.call('EXISTS', ekey) == 1 then out = hmgetList(ekey, ids) end
  for i = 1, #ids do out[i] = out[i] or '' end
  return out
end

-- listRanks appends to out each listed member's rank and window as
-- ranks.lua's header gives them. Listed member i has id ids[i] and entry
-- zs[i] in sorted set keys[i] with stored score scores[i]: false when it
-- has no entry, true when not read (only around > 0 without shared ties
-- can do without it: the window carries it). Per member it costs one
-- ZREVRANK (on a shared board one ZCOUNT more), plus a ZREVRANGE when
-- around > 0: a window of the member alone is its own entry, whose score
-- the caller read. Names and meta of every window are read together, one
-- HMGET per hash per 500 ids, since a redis.call costs the script about as
-- much as a small command; windows are kept in flat arrays, not a table
-- per member, for the same reason.
local function listRanks(out, keys, zs, ids, scores, around, shared, ekey)
  local ranks, starts, firsts, ats, ends, wid, wsc = {}, {}, {}, {}, {}, {}, {}
  for i = 1, #ids do
    local sc, key = scores[i], keys[i]
    local pos = sc and redis.call('ZREVRANK', key, zs[i])
    if not pos then
      ranks[i] = false
    else
      local rank = pos + 1
      if shared then rank = redis.call('ZCOUNT', key, '(' .. sc, '+inf') + 1 end
      ranks[i], starts[i], firsts[i], ats[i] = rank, pos, rank, #wid + 1
      if around == 0 then
        wid[#wid + 1] = ids[i]
        wsc[#wsc + 1] = sc
      else
        local start = pos - around
        if start < 0 then start = 0 end
        local r = redis.call('ZREVRANGE', key, start, pos + around, 'WITHSCORES')
        starts[i] = start
        if not shared then
          firsts[i] = start + 1
        elseif r[2] ~= sc then
          firsts[i] = redis.call('ZCOUNT', key, '(' .. r[2], '+inf') + 1
        end
        for j = 1, #r, 2 do
          local id = r[j]
          if string.sub(id, 17, 17) == '|' then id = string.sub(id, 18) end
          wid[#wid + 1] = id
          wsc[#wsc + 1] = r[j + 1]
        end
      end
      ends[i] = #wid
    end
  end
  local names = hmgetList(KEYS[3], wid)
  local metas = metasOf(ekey, wid)
  local o = #out
  for i = 1, #ids do
    local from, to = ats[i], ends[i]
    if not ranks[i] then
      out[o + 1] = 0
      o = o + 1
      if around > 0 then
        out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 0, 0, 0, 0
        o = o + 4
      end
    elseif around == 0 then
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = ranks[i], wsc[from], names[from] or '', metas[from]
      o = o + 4
    else
      out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = 1, ranks[i], starts[i], firsts[i], to - from + 1
      o = o + 5
      for k = from, to do
        out[o + 1], out[o + 2], out[o + 3], out[o + 4] = wid[k], wsc[k], names[k] or '', metas[k]
        o = o + 4
      end
    end
  end
  return out
end

-- heldFor is a self read's held members among ids (sorted-set members
-- zs): i -> its stored score in q, the period's held entries
-- (apply_hold.lua), for each held there and not banned (bkey, the board's
-- ban hash: a banned member is in no read, its own included, R21); false
-- when none is.
local function heldFor(q, bkey, ids, zs)
  local held = false
  for i = 1, #ids do
    local sc = redis.call('ZSCORE', q, zs[i])
    if sc then
      local b = redis.call('HMGET', bkey, ids[i], 'g|' .. ids[i])
      if not (b[1] or b[2]) then
        held = held or {}
        held[i] = sc
      end
    end
  end
  return held
end

-- clockMs is the clock in unix ms: ARGV[2], else the server's TIME.
local function clockMs()
  if ARGV[2] ~= '' then return tonumber(ARGV[2]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- banDue reports whether a ban of the board's ban hash bkey has reached its
-- until at the clock now (nil: read it), so the caller must answer
-- "LB expired" and let ban.lua lift it before anything reads or writes
-- (R21: a ban whose until passed is lifted; it is never shown as banned).
-- The hash's field '|exp' holds the earliest until ('|' never occurs in a
-- member id).
local function banDue(bkey, now)
  local e = redis.call('HGET', bkey, '|exp')
  if not e then return false end
  return (now or clockMs()) >= tonumber(e)
end

-- ---- idempotency records (R4; apply.lua and hot.lua) ----
-- A record is the field "<m>|<id>" (member m's request id) of a hash per
-- board and time bucket, <p>:{b}:r:<W>.<k> with W the idempotency window
-- in ms and k = floor(now / W), instead of a key with an expiry of its own
-- per record: an HSET into a hash costs Redis a fraction of SET ... PX,
-- and one HMGET per bucket reads every record a call needs. A lookup at
-- time now reads buckets k and k-1, so a record is found between W and 2W
-- after it was written (R4 asks for at least W). The hash of bucket k
-- expires W/4 after the end of bucket k+1, and the first record written in
-- bucket k unlinks bucket k-2 before that expiry could free it on the main
-- thread (a large hash's free blocks; UNLINK frees it in the background).
-- The bucket keys are built here from KEYS[1]'s prefix, so they carry the
-- board's {hash tag}: same slot as every declared key.
--
-- The cfg hash (KEYS[1]) notes the window: rw = the W of the buckets being
-- written, rs = since when (unix ms), ro = the W before it, when the window
-- changed ('n' or absent: none). Records of the previous window are still
-- read on a miss until rs + that window, so a window change forgets no
-- record within its window. rb = the bucket ("<W>.<k>") whose hash already
-- has its expiry.
--
-- recordsOpen starts a call's records: meta is the cfg hash's HMGET of
-- 'v', 'rw', 'rs', 'ro', 'rb'; event i's member id and request id are
-- ARGV[a0 + k(i-1) + 1] and ARGV[a0 + k(i-1) + 7] (apply.lua's eight and
-- hot.lua's seven arguments per event); w, when the caller has it, is the
-- window in decimal.
local function recordsOpen(meta, window, now, a0, k, n, w)
  local base = string.sub(KEYS[1], 1, -4) .. 'r:' -- KEYS[1] ends in "cfg"
  local ro, rs = meta[4] or 'n', nil
  -- rw is written in decimal as formatted here: when the caller's decimal
  -- w is the same, the window did not change (and w is that form), and rs
  -- is read only if ro needs it.
  if not w or meta[2] ~= w then
    w = string.format('%d', window)
    local rw = tonumber(meta[2])
    rs = tonumber(meta[3]) or 0
    if rw ~= window then
      if rw then ro, rs = string.format('%d', rw), now end
      redis.call('HSET', KEYS[1], 'rw', w, 'rs', string.format('%d', rs), 'ro', ro)
    end
  end
  -- The key names are each made with one concatenation (a string each).
  local b = math.floor(now / window)
  local tag = w .. '.' .. string.format('%d', b)
  local cur = base .. tag
  -- fresh: what recordsFlush needs to give the bucket's hash its expiry,
  -- false once it has one (nearly every call).
  local fresh = meta[5] ~= tag and {pre = base .. w .. '.', bucket = b, window = window, now = now, tag = tag}
  local oldCur, oldPrev = false, false
  if ro ~= 'n' then
    local ow = tonumber(ro)
    rs = rs or tonumber(meta[3]) or 0
    if ow and ow > 0 and now < rs + ow then
      local ob = math.floor(now / ow)
      oldCur, oldPrev = base .. ro .. '.' .. string.format('%d', ob), base .. ro .. '.' .. string.format('%d', ob - 1)
    end
  end
  local fields = {ARGV[a0 + 1] .. '|' .. ARGV[a0 + 7]}
  for i = 2, n do
    local j = a0 + k * (i - 1)
    fields[i] = ARGV[j + 1] .. '|' .. ARGV[j + 7]
  end
  local got = redis.call('HMGET', cur, unpack(fields))
  local gotp = redis.call('HMGET', base .. w .. '.' .. string.format('%d', b - 1), unpack(fields))
  -- Made with all its fields at once: a table grown a field at a time is
  -- rehashed as it grows.
  return {cur = cur, fresh = fresh, oldCur = oldCur, oldPrev = oldPrev, fields = fields, got = got, gotp = gotp,
    written = {}}
end

-- recordGet is event i's record, or false.
local function recordGet(R, i)
  local f = R.fields[i]
  local rec = R.written[f] or R.got[i] or R.gotp[i]
  if rec then return rec end
  if R.oldCur then return redis.call('HGET', R.oldCur, f) or redis.call('HGET', R.oldPrev, f) end
  return false
end

-- recordPut notes event i's record, the last thing its event does; the
-- call's records are written together by recordsFlush (one HSET per call
-- instead of one per event), after every other write of the call.
local function recordPut(R, i, rec)
  R.written[R.fields[i]] = rec
end

-- hsetMap writes the fields of t (field -> value; false: none) into hash
-- key with one HSET, in chunks so no unpack grows past Lua's stack limit,
-- and reports whether there were any.
local function hsetMap(key, t)
  local f1, v1 = next(t)
  if f1 == nil then return false end
  if next(t, f1) == nil then
    -- One field (a call of one event): no list to build.
    if not v1 then return false end
    redis.call('HSET', key, f1, v1)
    return true
  end
  local fv = {}
  for f, v in pairs(t) do
    if v then
      fv[#fv + 1] = f
      fv[#fv + 1] = v
    end
  end
  for i = 1, #fv, 1000 do
    redis.call('HSET', key, unpack(fv, i, math.min(i + 999, #fv)))
  end
  return #fv > 0
end

-- recordsFlush writes the records recordPut noted.
local function recordsFlush(R)
  if not hsetMap(R.cur, R.written) then return end
  local F = R.fresh
  if F then
    R.fresh = false
    -- Relative to the script's clock, as every expiry here.
    redis.call('PEXPIRE', R.cur, (F.bucket + 2) * F.window + math.floor(F.window / 4) - F.now)
    redis.call('UNLINK', F.pre .. string.format('%d', F.bucket - 2))
    redis.call('HSET', KEYS[1], 'rb', F.tag)
  end
end

-- ---- batched hash writes ----
-- A hash field an event sets (a member's name, its sorted-set member) is
-- noted in a batch and the batch written with one HSET per hash at the end
-- of the call: a redis.call costs the script about as much as the command
-- itself, and most of an event's writes are such fields. B.vals[key][f]
-- is a field as the call left it (false: deleted; nil: not set by it).
-- B.exp (key -> ms, see batchExpire) is made when first needed.
local function batchNew() return {keys = {}, vals = {}, exp = false} end
local function batchSet(B, key, f, v)
  local t = B.vals[key]
  if t then
    t[f] = v
  else
    B.vals[key] = {[f] = v}
    B.keys[#B.keys + 1] = key
  end
end
-- batchExpire gives key an expiry of ms (relative), set when the batch
-- is written: after its HSET, which may be what creates the key.
local function batchExpire(B, key, ms)
  local x = B.exp
  if x then x[key] = ms else B.exp = {[key] = ms} end
end
local function batchWrite(key, t, ms)
  hsetMap(key, t)
  if ms then redis.call('PEXPIRE', key, ms) end
end
-- batchFlush writes the batch, each hash under its own pcall, so each is
-- written even when another could not be, and returns the first error
-- (nil: none).
local function batchFlush(B)
  local bad
  local keys, vals, exp = B.keys, B.vals, B.exp
  for k = 1, #keys do
    local key = keys[k]
    local ok, err = pcall(batchWrite, key, vals[key], exp and exp[key])
    if not ok and not bad then bad = err end
  end
  return bad
end

-- runEvents runs one(i) for the call's events i = 1..n and returns their
-- replies joined by "\n". Then it runs each of finish, the call's other
-- deferred writes (the seq, batches), and last the records (recordsFlush).
-- The events run under pcall and each finish and the records under its
-- own, so each runs even when a redis.call before it failed (only a key of
-- the wrong type can make one fail): every event that completed keeps its
-- writes and its record, as when each event wrote its own; the event that
-- failed part way gets no record (a retry applies it again), and the call
-- answers the first error.
local function runEvents(n, one, finish, R)
  local out = {}
  local ok, err = pcall(function()
    for i = 1, n do out[i] = one(i) end
  end)
  for _, f in ipairs(finish) do
    local fok, ferr = pcall(f)
    if ok and not fok then ok, err = false, ferr end
  end
  local rok, rerr = pcall(recordsFlush, R)
  if ok and not rok then ok, err = false, rerr end
  if not ok then return redis.error_reply(tostring(err)) end
  return table.concat(out, '\n')
end
