-- apply_hold.lua: apply.lua's block for score integrity (docs/protocol.md
-- §16, R35), on when the apply config has the token "hold": a board with
-- a validation hook ("hook=<K>": the events it must see are claimed for it
-- instead of applied: every event when K is 0, else those whose new score
-- is at least the K-th shown one's, or while fewer than K are shown;
-- "claim=<ms>": how long a claim lives) and flags ("jump=<J>": an event
-- that improves the member's score by more than J holds it;
-- "gain=<P>/<per ms>": rises within per adding up to more than P do). A
-- held member's entry of a period leaves the period's sorted set for q:<i>
-- (score and sorted-set member kept); its later events in that period
-- move it there, and their ranks are those it would have in z:<i>. A
-- later block's on.write sees ev.held (held before the event) and
-- ev.holding (this event held it): a region board's entry leaves its
-- region's set with it (apply_region.lua).
--
-- Keys built from P (KEYS[1]'s prefix):
--   P .. 'q:' .. <period index>   sorted set: the period's held entries
--   P .. 'hd:' .. <period index>  hash: member -> "<at ms>\t<reason>\t<ids>",
--                                 the ids applied since it was held (at most
--                                 100, space-separated, the holding one first)
--   P .. 'g'                      hash: member -> "<bucket>:<sum> ...", its
--                                 rises of the last per in buckets of per/16
--                                 (gain flag), ascending
-- ARGV, one per event i, the last n before DA (on a region board, before
-- apply_region.lua's RG, the last): ARGV[#ARGV - 2 - n + i] (- 1 with RG)
--   is event i's verdict: "" none, "a <token>" accept or
--   "f <token> <reason>" flag, the hook's answer under the claim named
--   token.
--
-- An event's record (prelude's, by its key) may be, instead of an applied
-- one:
--   "?<hash>.<token>:<until ms>"  a claim for the hook, live until until
--   "~<hash>:<reason>"            the hook's reject (hold.lua writes it)
--   "=<hash>:<a|f>:<reason>"      a verdict whose event was refused, kept
--                                 so a re-send is judged by it, not again
-- and an event's reply may be "!pending:<ms the claim has left>",
-- "!rejected:<reason>", "!idempotency_conflict" or
-- "!validate:<token>:<period>:<1|0 had an entry>:<score>:<rank>" (claimed:
-- nothing else written). An applied event's record ends in ",h" when its
-- member is held after it; the event that held it replies with the record
-- and "\t<reason>".
if opt.hold then
  local hookTop = tonumber(opt.hook)
  local claimFor = tonumber(opt.claim or '0')
  local jump = tonumber(opt.jump)
  local gainP, gainPer
  if opt.gain then
    local p, w = string.match(opt.gain, '^(%d+)/(%d+)$')
    gainP, gainPer = tonumber(p), tonumber(w)
  end
  local va = #ARGV - 2 - n -- ARGV[va + i]: event i's verdict
  if opt.region then va = va - 1 end
  local vOf, whyOf = {}, {} -- event i's verdict ('a', 'f' or false) and reason

  -- Each slot's hd key; the events' held records in the clock's slot,
  -- one HMGET per call when it holds any; what this call holds or lists,
  -- by slot and member (heldNow[s][member]).
  local hdKey = {}
  for k = 0, 2 do
    if not slots[k] then slots[k] = newSlot(k) end
    hdKey[k] = P .. 'hd:' .. slots[k].idx
  end
  local hdv = false
  local heldNow = {[0] = {}, {}, {}}
  if call('EXISTS', hdKey[cur]) == 1 then
    local ms = {}
    for i = 1, n do ms[i] = ARGV[12 + 8 * (i - 1) + 1] end
    hdv = call('HMGET', hdKey[cur], unpack(ms))
  end
  local function heldRec(ev)
    local s = ev.s
    local h = heldNow[s][ev.member]
    if h ~= nil then return h end
    if s ~= cur then return call('HGET', hdKey[s], ev.member) end
    return hdv and hdv[ev.i]
  end

  -- What this call's events need of the block. Most calls of a hooked
  -- board hold events that are new (no record), unjudged (no verdict),
  -- of members not held, in the clock's period, on a board without flags:
  -- only the contender check (on.score) applies to them, and the step's
  -- other hooks are not installed, so they cost those events nothing. A
  -- record may be one of the block's; a member may be held before (hdv),
  -- in another period (an event with its own time) or by this call (a
  -- flag); a claim this call writes installs on.record for the events
  -- after it (an id the call carries twice).
  local needRecord = R.oldCur ~= false
  local needHeld = needRecord or jump ~= nil or gainP ~= nil
  for i = 1, n do
    local rec = Rg[i] or Rp[i]
    if rec then
      needRecord = true
      if string.byte(rec) == 61 then needHeld = true end -- "=": a kept verdict, maybe a flag
    end
    local varg = ARGV[va + i]
    if varg ~= '' then
      needRecord = true
      if string.byte(varg) == 102 then needHeld = true end -- "f": a flag
    end
    if ARGV[12 + 8 * (i - 1) + 6] ~= '' or (hdv and hdv[i]) then needHeld = true end
  end

  -- The core's wouldRank (a held entry is in q, not in z): placed in z for
  -- one ZREVRANK and taken out.
  wouldRank = function(z, sc, zm)
    if tie == 'shared' then return call('ZCOUNT', z, '(' .. sc, '+inf') + 1 end
    call('ZADD', z, sc, zm)
    local r = call('ZREVRANK', z, zm)
    call('ZREM', z, zm)
    return r + 1
  end

  local function record(i, rec)
    local varg = ARGV[va + i]
    if not rec and varg == '' then -- the common case: a new event, no verdict
      vOf[i] = false
      return nil
    end
    local j = 12 + 8 * (i - 1)
    local hash = string.match(ARGV[j + 5], '^([^.]*)')
    local v, tok, why = string.match(varg, '^(%a) (%S+) ?(.*)$')
    if rec then
      local c = string.sub(rec, 1, 1)
      if c == '?' then
        local h, t, u = string.match(rec, '^%?([^.]*)%.([^:]*):(%d+)$')
        if h ~= hash then return '!idempotency_conflict' end
        u = tonumber(u)
        if u > now and (not v or t ~= tok) then return '!pending:' .. fmt('%d', u - now) end
      elseif c == '~' then
        local h, r = string.match(rec, '^~([^:]*):(.*)$')
        if h ~= hash then return '!idempotency_conflict' end
        return '!rejected:' .. r
      elseif c == '=' then
        local h, kv, kw = string.match(rec, '^=([^:]*):(%a):(.*)$')
        if h ~= hash then return '!idempotency_conflict' end
        v, why = kv, kw
      else
        return '1' .. rec -- applied: its duplicate (the caller tells a conflict)
      end
    end
    vOf[i], whyOf[i] = v or false, why or ''
    -- Kept should the event be refused after all; its own record replaces it.
    if v then Rw[Rf[i]] = '=' .. hash .. ':' .. v .. ':' .. why end
    return nil
  end

  if needRecord then on.record = record end

  local heldSlot = {}
  local function admit(ev)
    local h = heldRec(ev)
    ev.held = h or false
    if h then
      local q = heldSlot[ev.s]
      if not q then
        local sl = ev.sl
        q = {z = P .. 'q:' .. sl.idx, m = sl.m, idx = sl.idx, exp = sl.exp}
        heldSlot[ev.s] = q
      end
      ev.sl = q
    end
  end
  if needHeld then hook('admit', admit) end

  if hookTop then
    local kth = {} -- per slot: the K-th shown stored score, false when fewer
    if hookTop > 0 then
      -- The clock's slot's events below it are no contenders: the step
      -- does not run on.score for them.
      local r = call('ZREVRANGE', slots[cur].z, hookTop - 1, hookTop - 1, 'WITHSCORES')
      kth[cur] = r[2] and tonumber(r[2]) or false
      scoreMin = kth[cur] or nil
    end
    hook('score', function(ev)
      local i = ev.i
      if vOf[i] or (ev.had and ev.new == ev.old) then return nil end
      local z = slots[ev.s].z
      if hookTop > 0 then
        local k = kth[ev.s]
        if k == nil then
          local r = call('ZREVRANGE', z, hookTop - 1, hookTop - 1, 'WITHSCORES')
          k = r[2] and tonumber(r[2]) or false
          kth[ev.s] = k
        end
        if k and (desc and ev.new or -ev.new) < k then return nil end
      end
      local j = 12 + 8 * (i - 1)
      local hash, tok = string.match(ARGV[j + 5], '^([^.]*)%.(.*)$')
      Rw[Rf[i]] = '?' .. hash .. '.' .. tok .. ':' .. fmt('%d', now + claimFor)
      on.record = record
      local rk = 0
      if ev.had then
        rk = ev.prev
        if ev.held then rk = wouldRank(z, ev.olds, ev.oldz) end
      end
      return 'validate:' .. tok .. ':' .. ev.sl.idx .. ':' .. (ev.had and '1' or '0') .. ':' ..
        fmt('%d', ev.old) .. ':' .. fmt('%d', rk)
    end)
  end

  -- gain adds rise (when positive) to member's recent gains and returns
  -- their sum within per (rank.Board's memory engine keeps the same).
  local gk = P .. 'g'
  local gains = {} -- member -> its list as this call left it
  local function gain(member, rise)
    local w = math.max(math.floor(gainPer / 16), 1)
    local s = gains[member]
    if s == nil then s = call('HGET', gk, member) or '' end
    if s == '' and rise <= 0 then return 0 end
    local upto = math.floor((now - gainPer) / w) - 1
    local idx, sum = {}, {}
    for b, v in string.gmatch(s, '(%-?%d+):(%d+)') do
      if tonumber(b) > upto then
        idx[#idx + 1], sum[#sum + 1] = tonumber(b), tonumber(v)
      end
    end
    if rise > 0 then
      local b = math.floor(now / w)
      if #idx > 0 and idx[#idx] == b then
        sum[#sum] = math.min(sum[#sum] + rise, MAX)
      else
        idx[#idx + 1], sum[#sum + 1] = b, rise
      end
    end
    local total, parts = 0, {}
    for k = 1, #idx do
      total = math.min(total + sum[k], MAX)
      parts[k] = fmt('%d:%d', idx[k], sum[k])
    end
    s = table.concat(parts, ' ')
    gains[member] = s
    if s == '' then
      call('HDEL', gk, member)
      batchSet(B, gk, member, false)
    else
      batchSet(B, gk, member, s)
      batchExpire(B, gk, 2 * gainPer)
    end
    return total
  end

  local function write(ev)
    local i, member = ev.i, ev.member
    ev.holding = false
    if not ev.held and vOf[i] ~= 'f' and not jump and not gainP then return end
    local z, sc = slots[ev.s].z, ev.ns
    if not desc then sc = fmt('%d', -ev.new) end
    local rise = ev.new - ev.old -- old is 0 without an entry
    if not desc then rise = -rise end
    local reason
    if vOf[i] == 'f' then
      reason = whyOf[i]
      if reason == '' then reason = 'flag' end
    elseif jump and rise > jump then
      reason = 'jump'
    elseif gainP and gain(member, rise) > gainP then
      reason = 'gain'
    end
    local hd = hdKey[ev.s]
    if ev.held then
      -- Out of z: the ranks it would have there.
      if ev.had then ev.prev = wouldRank(z, ev.olds, ev.oldz) end
      ev.rank = wouldRank(z, sc, ev.newz)
      local at, why, ids = string.match(ev.held, '^([^\t]*)\t([^\t]*)\t(.*)$')
      local _, count = string.gsub(ids, ' ', ' ')
      if count + 1 < 100 then
        local h = at .. '\t' .. why .. '\t' .. ids .. ' ' .. ev.id
        call('HSET', hd, member, h)
        heldNow[ev.s][member] = h
      end
      ev.extra = (ev.extra or '') .. ',h'
      return
    end
    if not reason then return end
    -- Held from this event on: its entry leaves z (its ranks stay those
    -- read in z, where it was until now).
    local q, sl = P .. 'q:' .. ev.sl.idx, ev.sl
    local fresh = sl.exp > now and call('EXISTS', q) == 0
    call('ZREM', z, ev.newz)
    call('ZADD', q, sc, ev.newz)
    if fresh then call('PEXPIRE', q, sl.exp - now) end
    local h = fmt('%d', now) .. '\t' .. reason .. '\t' .. ev.id
    if call('HSET', hd, member, h) == 1 and sl.exp > now and call('HLEN', hd) == 1 then
      call('PEXPIRE', hd, sl.exp - now)
    end
    heldNow[ev.s][member] = h
    ev.holding = true
    ev.extra = (ev.extra or '') .. ',h'
    ev.tail = '\t' .. reason
  end
  if needHeld then hook('write', write) end
end
