-- apply.lua: apply N score events to one board, in order, each atomically
-- and idempotently as if it were alone: one script call per board per
-- pipeline instead of one per event (N >= 1).
--
-- KEYS[1]    <p>:{b}:cfg     hash: v = config version, j = config JSON,
--            a = the apply config (below), me = "1" once any event wrote
--            meta, sh = "1" once a config with tiebreak shared was stored,
--            and prelude's record fields rw, rs, ro, rb
-- KEYS[2]    <p>:{b}:seq     string: the board's change sequence
-- KEYS[3]    <p>:{b}:n       hash: member id -> display name
-- KEYS[4]    <p>:{b}:z:<A>   sorted set of period slot A
-- KEYS[5]    <p>:{b}:m:<A>   hash: member id -> sorted-set member (first/last), slot A
-- KEYS[6]    <p>:{b}:z:<B>   sorted set of period slot B (the period after A)
-- KEYS[7]    <p>:{b}:m:<B>   hash of slot B
-- KEYS[8]    <p>:{b}:z:<P>   sorted set of period slot P (the period before A:
--            late events within grace, R17)
-- KEYS[9]    <p>:{b}:m:<P>   hash of slot P
--            (a board without periods passes its one period's keys as A, B and P)
-- KEYS[10]   <p>:{b}:ban     hash: the board's bans (see ban.lua; R21)
-- KEYS[11]   <p>:{b}:guard   a key never written: on Redis Cluster a call
--            that names a missing key never runs while its slot migrates
--            (rank/redisstore/cluster.go)
--            then a block's keys (derived boards: see apply_derived.lua).
--            The idempotency records are fields "<m>|<id>" (member m's
--            request id; R4 v1.1) of the bucket hashes <p>:{b}:r:<W>.<k>
--            (prelude's records). Blocks build their own keys from P, the
--            prefix "<p>:{b}:" of KEYS[1] (same hash tag), each listed in
--            its file's header.
--
-- ARGV[1]  config version the caller validated the events against
-- ARGV[2]  now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3]  start of slot A (unix ms) = end of P
-- ARGV[4]  boundary: end of A = start of B (unix ms); 0 = no periods, always A
-- ARGV[5]  end of slot B (unix ms)
-- ARGV[6]  period index of A
-- ARGV[7]  period index of B
-- ARGV[8]  expiry time of A's keys (unix ms on the clock of ARGV[2]; 0 = never)
-- ARGV[9]  expiry time of B's keys
-- ARGV[10] start of slot P (unix ms)
-- ARGV[11] period index of P
-- ARGV[12] expiry time of P's keys
-- then eight per event i, at j = 12 + 8*(i-1):
-- ARGV[j+1] member id
-- ARGV[j+2] display name ("" keeps the stored one)
-- ARGV[j+3] op: 1 = delta, 2 = value
-- ARGV[j+4] amount, a decimal integer within +-(2^53-1)
-- ARGV[j+5] "<payload hash>.<attempt token>" (opaque here; the caller compares the
--           hash for conflicts and the token to tell its own write from a duplicate)
-- ARGV[j+6] the event's time `at` in unix ms, "" = the clock; or "r<ms>":
--           an import into the past period in slot P (§18; the caller
--           checked it with rank.Board.Restore), at that time, outside R17
-- ARGV[j+7] the event's request id
-- ARGV[j+8] the event's meta, a JSON object, "" = none
-- then a block's arguments (derived boards), and last two counts:
-- ARGV[#ARGV-1] DA, the blocks' arguments before these two ("0" = none)
-- ARGV[#ARGV]   DK, the blocks' keys after KEYS[11] ("0" = none)
--
-- The apply config (cfg field a, rank/redisstore/spec.go) is what the
-- events are applied by, stored with the config version the call checks:
-- "<mode> <order> <tiebreak> <window ms>", then a token per optional
-- feature the board uses, " <name>" or " <name>=<value>", e.g.
-- "incr desc first 600000 ends=1767225600000 grace=60000 limit=5". The
-- core reads starts, ends and grace (R17: unix ms, ms); a block reads its
-- own token (opt.<name>).
--
-- Returns one string: the events' replies in order, joined by "\n" (one
-- bulk reply rather than an array of N, cheaper to build and to read; no
-- reply contains "\n"). Each is "0" .. record when it was applied,
-- "1" .. record when its id was already applied (nothing changed), or
-- "!" .. code when it failed, where record is
-- "hash.token,score,rank,prev_rank,prev_score,seq,period" (rank 0 when
-- the ranks were not read, ranked below: prev_rank is then -1 for a member
-- that had an entry, 0 for a new one) followed by the blocks' fields, each "," and a value: a value that starts with a digit
-- is a cohort (apply_cohort.lua), one that starts with a letter is another
-- block's, tagged by that letter (g: a region, apply_region.lua). An
-- applied event's reply may go on with a block's tail (a shard's:
-- apply_shard.lua; a region board's move: apply_region.lua) after the
-- record. Codes:
-- invalid_score, bad_request, out_of_range, board_closed:<reason> (R30:
-- not_started, ended or period_over), at_ahead, banned, and the blocks'
-- (limit_reached: apply_limit.lua); that event changed nothing; the next
-- ones still run. A refusal of the whole call is an error reply
-- "LB <code>": unknown_board, stale (the config version changed), nospec
-- (a config stored without its apply config: the caller writes it and
-- sends again), clock (now is outside slots A and B), expired (a ban's
-- until has passed: ban.lua must lift it first), bad_request (the board
-- arguments); it writes nothing. The clock is read once per call. A
-- redis.call that fails part way (only a key of the wrong type can) makes
-- the call answer its error after the events before it were written with
-- their records (run, below).
--
-- R21: a member with a record in the ban hash (the board's own or its copy
-- of a global one) gets banned, checked after the duplicate check: a retry
-- of an event applied before the ban still gets its first result, changing
-- nothing. Every record present is live: one past its until makes the whole
-- call answer expired, so the check costs one EXISTS per call when the
-- board has no bans and one HMGET per event when it has.
--
-- R17, per event (rank.Board.Admit is the same rule in Go): its time t is
-- `at` or the clock; it is refused (board_closed) unless t is in
-- [starts_at, ends_at), its period is the current one (the slot the clock is
-- in) or the one just before, and the clock is before that period's end (the
-- board's end when that comes first) plus grace. It is applied to the slot
-- that contains t.
--
-- Each event's rank and score are read right after its own step (R3): the
-- events of a call run one after the other, exactly as N calls in a row.
--
-- Sorted-set scores are the plain integer score, negated on asc boards so
-- every read uses the REV commands. Ties: first -> "<16 digits of inverted
-- seq>|<member>", last -> "<16 digits of seq>|<member>", shared -> "<member>"
-- ('|' never occurs in a member id, so the form is unambiguous).
--
-- Blocks. This file is the step every event takes on a plain board; each
-- optional feature is a block in a file of its own, apply_<feature>.lua,
-- which lua.Source puts in where the line "-- @blocks" stands below, in
-- file name order, within `if on then ... end` (on: some block may be on).
-- A block is one `if <condition> then ... end` (its token in the apply
-- config, usually), so a board without the feature runs none of it, not
-- even its closures; it joins the event step with hooks, each appended to
-- the list on[kind] by hook(kind, f) (the list made with its first hook),
-- or set as on.record:
--   on.record(i, rec) -> reply|nil  (one block at most) in place of the
--                               duplicate check: rec is event i's record
--                               (false: none); a reply answers the event
--                               (a duplicate's is "1" .. rec), nil goes on;
--                               a block with other hooks may set it during
--                               the call, for the events after;
--   on.admit[k](e) -> code|nil  after the core admitted the event (R17, and
--                               its duplicate and ban checks), before the
--                               score is computed: a code refuses it ("!"
--                               .. code, nothing written), or the hook may
--                               change e.amount, which the step then uses,
--                               and e.sl, the slot table whose keys it
--                               writes (the same idx and exp);
--   on.score[k](e) -> code|nil  once the new score is known and the
--                               previous rank read (e.had, e.old, e.new,
--                               e.olds, e.oldz, e.prev), before any write,
--                               unless the score is below scoreMin:
--                               a code refuses it (nothing written by the
--                               core; the hook's own writes stay);
--   on.write[k](e)              after the event's entry is written and its
--                               ranks read, before its record: a hook may
--                               change e.rank and e.prev (what the record
--                               and the ack say), append ",<field>" to
--                               e.extra (the record's block fields) and
--                               set e.tail (the reply's, after the record);
--   on.finish[k]()              once after every event of the call, each
--                               under its own pcall, before the records.
-- e is one table per call, filled for an event when a hook sees it:
-- i, member, name, op, amount, t (its time), id, meta, s (its slot: 0 = P,
-- 1 = A, 2 = B) and sl (slots[s]: z, m, idx, exp; newSlot); for on.write
-- also had, old, new, ns (new as a decimal string), changed (the entry
-- moved), oldz, olds (the old stored score, a string), newz, rank, prev,
-- seq. A block may also use the core's locals declared before "-- @blocks"
-- (call, fmt, n, now, tm, cur, P, hook, slots and newSlot, cf, opt, mode,
-- order, desc, tie, B and the prelude's batch functions, R, Rw, Rf) and set
-- nextSeq (the event's seq and tie key, in place of the board's next
-- change sequence; S.seq is the last one taken, and S.dirty = true has it
-- written at the end), ranked (false: rank and prev are not read, and stay
-- 0), scoreMin (below it, on.score is not run for an event of the clock's
-- slot, cur) and entryTail (each applied event's reply ends with its
-- sorted-set members and record's hash), set wouldRank for the blocks
-- after it, and set place (a write hook's work with its fields as
-- arguments, below). A block is code of the function
-- run: a refusal of the whole call is a return of its error reply. A
-- hook's own writes go in its event's step; writes of hash fields may wait
-- in B (prelude's batches), which is written after the events, before the
-- records.

-- What the events leave to the end of the call, kept outside run so it is
-- written even when an event fails part way (which ends run, and its
-- locals with it): the call's batch of hash fields (prelude's batch: keys,
-- vals, exp; run's B), R (the records: false until the events start),
-- finish (the blocks' on.finish), seq (the board's seq, the last one
-- taken) and dirty (seq must still be written). One table made whole: a
-- table grown a field at a time is rehashed as it grows.
local S = {keys = {false}, vals = false, exp = false, R = false, finish = false, seq = false, dirty = false}

-- newSlot is period slot k's table (0 = P, 1 = A, 2 = B; see the header):
-- its sorted set z, member hash m, period index idx and the expiry time of
-- its keys exp.
local function newSlot(k)
  if k == 1 then return {z = KEYS[4], m = KEYS[5], idx = ARGV[6], exp = ARGV[8] + 0} end
  if k == 2 then return {z = KEYS[6], m = KEYS[7], idx = ARGV[7], exp = ARGV[9] + 0} end
  return {z = KEYS[8], m = KEYS[9], idx = ARGV[11], exp = ARGV[12] + 0}
end

-- run is the call but those deferred writes: its checks, the blocks'
-- setup and the events, one after the other in one loop; it returns their
-- replies joined by "\n", or before the events start an error reply that
-- refuses the whole call. The events run in run itself, not in a function
-- per event step, and the helpers it calls (newSlot, the prelude's) arrive
-- as arguments: a closure makes an upvalue of each outer local it uses,
-- allocated and freed on every call, where run's own locals and arguments
-- cost nothing.
local function run(S, newSlot, banDue, recordsOpen, recordGet, batchSet, batchExpire)
  local MAX = 9007199254740991
  -- The per-event path below runs tens of thousands of times a second on
  -- Redis's one core, where the script's own Lua work (string.format above
  -- all) costs about as much as its commands (docs/performance.md, "Redis
  -- instructions per event"): it keeps what it calls in locals, formats
  -- numbers with few string.format calls, makes few strings and tables, and
  -- leaves the optional features to blocks a plain board never enters.
  local call, fmt, sfind = redis.call, string.format, string.find

  -- ---- the call: config, clock, records ----
  -- The config version check (prelude's refused), the apply config and the
  -- records' fields (prelude's recordsOpen), in one call.
  local cf = call('HMGET', KEYS[1], 'v', 'rw', 'rs', 'ro', 'rb', 'a', 'me', 'sh')
  if not cf[1] then return redis.error_reply('LB unknown_board') end
  if cf[1] ~= ARGV[1] then return redis.error_reply('LB stale') end
  if not cf[6] then return redis.error_reply('LB nospec') end
  local mode, order, tie, ws, more = string.match(cf[6], '^(%l+) (%l+) (%l+) (%d+)(.*)$')
  -- opt: the optional features' tokens (name -> value), false when none.
  local opt, startsAt, endsAt, grace = false, nil, nil, 0
  if more and more ~= '' then
    opt = {}
    for k, v in string.gmatch(more, ' (%l+)=?([^ ]*)') do opt[k] = v end
    if opt.starts then startsAt = tonumber(opt.starts) end
    if opt.ends then endsAt = tonumber(opt.ends) end
    if opt.grace then grace = tonumber(opt.grace) end
  end
  -- Numbers known to be decimal (ws, by the pattern; the caller's, by the
  -- header) are read with arithmetic, one strtod, rather than tonumber, two;
  -- DA and DK, checked, are "0" on nearly every call.
  local window = ws and ws + 0
  local dk, da = ARGV[#ARGV], ARGV[#ARGV - 1]
  if dk == '0' then dk = 0 else dk = tonumber(dk) end
  if da == '0' then da = 0 else da = tonumber(da) end
  if not dk or not da then return redis.error_reply('LB bad_request') end
  local n = (#ARGV - 14 - da) / 8
  if (mode ~= 'incr' and mode ~= 'best' and mode ~= 'set')
    or (order ~= 'desc' and order ~= 'asc')
    or (tie ~= 'first' and tie ~= 'last' and tie ~= 'shared')
    or not window or window < 1 or not grace or grace < 0
    or (opt and ((opt.starts and not startsAt) or (opt.ends and not endsAt)))
    or n < 1 or n % 1 ~= 0 or #KEYS ~= 11 + dk then
    return redis.error_reply('LB bad_request')
  end
  local desc = order == 'desc'
  local wantOp = mode == 'incr' and '1' or '2'

  -- meta: an event of the call carries meta, or the board ever stored some
  -- (apply_meta.lua). on: the hook lists the blocks join the event step
  -- with (the header; hook adds one), false when no block can be on (no
  -- token past the core's four, no dependants, no meta): such a call makes
  -- none of the blocks' tables.
  local meta = cf[7] ~= false
  if not meta then
    for i = 1, n do
      if ARGV[12 + 8 * i] ~= '' then
        meta = true
        break
      end
    end
  end
  local on, e, P, hook = false, nil, nil, nil
  if more ~= '' or dk > 0 or meta then
    on, opt = {}, opt or {}
    hook = function(kind, f)
      local l = on[kind]
      if l then l[#l + 1] = f else on[kind] = {f} end
    end
    P = string.sub(KEYS[1], 1, -4) -- KEYS[1] ends in "cfg"
  end

  -- The period slots P, A and B (see the header): P = [fromP, fromA),
  -- A = [fromA, boundary), B = [boundary, toB) on a board with periods.
  local boundary = ARGV[4] + 0
  local fromP, fromA, toB
  if boundary > 0 then fromP, fromA, toB = ARGV[10] + 0, ARGV[3] + 0, ARGV[5] + 0 end
  -- gated: an event's time needs more than the at_ahead check (R17).
  local gated = boundary > 0 or startsAt ~= nil or endsAt ~= nil

  -- The clock is read once per call (the records' bucket depends on it).
  local bkey = KEYS[10]
  local bans = call('EXISTS', bkey) == 1
  -- tm: the server's TIME reply, when the clock is the server's (a block
  -- may read it: apply_shard.lua).
  local now, cur, tm = nil, 1, false
  if ARGV[2] ~= '' then
    now = ARGV[2] + 0
  else
    tm = call('TIME')
    now = tm[1] * 1000 + math.floor(tm[2] / 1000)
  end
  if boundary > 0 then
    if now < fromA or now >= toB then return redis.error_reply('LB clock') end
    if now >= boundary then cur = 2 end
  end
  if bans and banDue(bkey, now) then return redis.error_reply('LB expired') end
  -- slots[s] is slot s's table (0 = P, 1 = A, 2 = B; newSlot), made for
  -- the clock's slot here and for another when an event first lands in it
  -- (false until then).
  local slots = {[0] = false, false, false}
  slots[cur] = newSlot(cur)

  local R = recordsOpen(cf, window, now, 12, 8, n, ws)
  local Rw, Rf, Rg, Rp = R.written, R.fields, R.got, R.gotp

  -- The call's writes of hash fields (prelude's batch B, the table S,
  -- given its first hash here): the names, and the member hash of the
  -- clock's slot (where nearly every event lands). That member hash is read
  -- for every event of the call with one HMGET (pmv; pm1, a string rather
  -- than a reply table, for a call of one event); what this call sets in it
  -- after is in pmw (false: deleted), so each event still reads it as it is
  -- after the events before it. Another slot's member hash is read and
  -- written per event.
  local pm = slots[cur].m
  local pmw = {}
  local B = S
  B.keys[1], B.vals = pm, {[pm] = pmw}
  local pmv, pm1 = false, false
  if n == 1 then
    pm1 = call('HGET', pm, ARGV[12 + 1]) -- (the header's j + 1)
  else
    local ms = {}
    for i = 1, n do ms[i] = ARGV[12 + 8 * (i - 1) + 1] end
    pmv = call('HMGET', pm, unpack(ms))
  end
  -- A member absent from the member hash may still have a raw "<member>"
  -- entry: tiebreak shared writes one, and a board that was ever shared
  -- (cfg field sh) may hold some in this period.
  local rawToo = tie == 'shared' or cf[8] ~= false

  -- The board's seq (KEYS[2]) is read once per call, counted in S.seq, and
  -- written once at the end when more than one event took a value (an INCR
  -- for the first event, a SET at the end for the others, instead of an
  -- INCR per event). Nothing else runs between the events of a call, and
  -- the SET runs even when an event failed part way.
  -- nextSeq, when a block sets it (apply_shard.lua), is the event's seq and
  -- tie key in place of the board's next change sequence.
  local nextSeq = nil
  -- ranked: the step reads the event's rank and previous rank (a block may
  -- turn it off: apply_shard.lua).
  local ranked = true
  -- scoreMin: an event of the clock's slot whose new score's goodness (the
  -- score, negated on asc boards) is below it gives on.score nothing to do,
  -- and the hooks are not run for it (a block sets it; nil: always run).
  local scoreMin
  -- entryTail: an applied event's reply goes on with ";<new sorted-set
  -- member>;<old one>;<its record's bucket hash>" after its record, in
  -- place of a hook's tail (a block sets it: apply_shard.lua).
  local entryTail = false
  -- wouldRank(z, sc, zm): the rank sorted-set member zm of stored score sc
  -- would have in sorted set z, where it is not (apply_hold.lua sets it).
  local wouldRank
  -- place(i, s, sl, member, had, changed, oldz, newz, ns, new), when a
  -- block sets it (apply_region.lua, on a board no other block writes
  -- for), runs after each applied event's write in place of a write hook,
  -- given the event's fields as arguments rather than in e, and returns
  -- the format of the record's part after its score, "%d,%d,%d,%d,<period
  -- index>" and the block's field with one more %d, that number, and the
  -- reply's tail (or nil): the record's numbers are formatted by one
  -- string.format, whose every %s would be one more sprintf.
  local place

  if on then
  -- @blocks
  end

  local onAdmit, onScore, onWrite
  local nAdmit, nScore, nWrite = 0, 0, 0
  -- see fills e with event i's fields for the hooks, once per event (the
  -- first hook that sees it), and returns true; refusal runs hooks
  -- list[1..count] on e and returns the first one's refusal ("!" .. code),
  -- or nil.
  local see, refusal
  if on then
    onAdmit, onScore, onWrite = on.admit, on.score, on.write
    nAdmit, nScore, nWrite = onAdmit and #onAdmit or 0, onScore and #onScore or 0, onWrite and #onWrite or 0
    S.finish = on.finish or false
    -- Made with the fields the core sets (a table grown a field at a time
    -- is rehashed as it grows), when a hook will see it.
    if nAdmit + nScore + nWrite > 0 then
      e = {i = false, member = false, name = false, op = false, amount = false, t = false, id = false, meta = false,
        s = false, sl = false, extra = false, tail = false, had = false, old = false, new = false, ns = false,
        changed = false, oldz = false, olds = false, newz = false, rank = false, prev = false, seq = false}
      see = function(i, j, member, amount, t, s, sl)
        e.i, e.member, e.name, e.op, e.amount, e.t, e.id, e.meta, e.s, e.sl =
          i, member, ARGV[j + 2], ARGV[j + 3], amount, t, ARGV[j + 7], ARGV[j + 8], s, sl
        e.extra, e.tail = nil, nil
        return true
      end
      refusal = function(list, count)
        for k = 1, count do
          local code = list[k](e)
          if code then return '!' .. code end
        end
        return nil
      end
    end
  end

  -- The first 8 digits of tiebreak first's pad, and the seq / 1e8 they are of.
  local padHi, padHiOf
  -- Slots whose keys this call already gave their expiry (made with the first).
  local expired = false

  -- The events, each as if alone (the header); an event's early reply
  -- ends its step (break) with reply set.
  S.R = R
  local out = n > 1 and {}
  for i = 1, n do
    local reply
    repeat
      local j = 12 + 8 * (i - 1)
      local member = ARGV[j + 1]
      local rec = Rw[Rf[i]] or Rg[i] or Rp[i]
      if not rec and R.oldCur then rec = recordGet(R, i) end
      local onRecord = on and on.record
      if onRecord then
        reply = onRecord(i, rec)
        if reply then break end
      elseif rec then
        reply = '1' .. rec
        break
      end
      if bans then
        local r = call('HMGET', bkey, member, 'g|' .. member)
        if r[1] or r[2] then
          reply = '!banned'
          break
        end
      end

      local amount = tonumber(ARGV[j + 4])
      if not amount or amount % 1 ~= 0 or amount > MAX or amount < -MAX then
        reply = '!invalid_score'
        break
      end
      if ARGV[j + 3] ~= wantOp or member == '' or sfind(member, '|', 1, true) then
        reply = '!bad_request'
        break
      end
      local t, s = now, 1
      local into = false
      if ARGV[j + 6] ~= '' then
        t = tonumber(ARGV[j + 6])
        if not t then
          -- "r<ms>": an admin's import into the past period the caller put
          -- in slot P (§18), written at that time, outside R17.
          t = tonumber(string.match(ARGV[j + 6], '^r(%d+)$') or '')
          if not t then
            reply = '!bad_request'
            break
          end
          into, s = true, 0
        end
      end
      if into then
        -- (rank.Board.Restore checked the period and the schedule.)
      elseif gated then
        -- R17 for an event of time t (rank.Board.Admit): the slot it is
        -- applied to, or the refusal's code; board_closed carries its
        -- reason (R30), whose times the caller reads from the config
        -- (rank.Board.Closed).
        local code, ends
        if t > now + 5000 then
          code = 'at_ahead'
        elseif startsAt and t < startsAt then
          code = 'board_closed:not_started'
        elseif endsAt and t >= endsAt then
          code = 'board_closed:ended'
        elseif boundary > 0 then
          s = nil
          if t >= fromA then
            if t < boundary then s = 1 elseif t < toB then s = 2 end
          elseif t >= fromP then
            s = 0
          end
          if s and s > cur then
            code = 'board_closed:not_started'
          elseif t >= toB then
            code = 'board_closed:not_started'
          elseif not s or s ~= cur and s ~= cur - 1 then
            code = 'board_closed:period_over'
          elseif s == 0 then
            ends = fromA
          else
            ends = s == 1 and boundary or toB
          end
        end
        if not code then
          if endsAt and (not ends or endsAt <= ends) then
            if now >= endsAt + grace then code = 'board_closed:ended' end
          elseif ends and now >= ends + grace then
            code = 'board_closed:period_over'
          end
        end
        if code then
          reply = '!' .. code
          break
        end
      elseif t > now + 5000 then
        reply = '!at_ahead'
        break
      end
      local sl = slots[s]
      if not sl then
        sl = newSlot(s)
        slots[s] = sl
      end
      -- e is filled only for an event a hook sees (seen).
      local seen = false
      if nAdmit > 0 then
        seen = see(i, j, member, amount, t, s, sl)
        reply = refusal(onAdmit, nAdmit)
        if reply then break end
        amount, sl = e.amount, e.sl
      end
      local zkey, mkey = sl.z, sl.m

      -- The member's entry: its sorted-set member oldz and stored score olds.
      local oldz
      if mkey == pm then
        oldz = pmw[member]
        if oldz == nil then
          if pmv then oldz = pmv[i] else oldz = pm1 end
        end
      else
        oldz = call('HGET', mkey, member)
      end
      local olds = false
      if oldz then
        olds = call('ZSCORE', zkey, oldz)
      else
        oldz = member
        if rawToo then olds = call('ZSCORE', zkey, member) end
      end
      local had = olds ~= false
      local old = 0
      if had then
        old = olds + 0 -- a score Redis wrote: decimal
        if not desc then old = -old end
      end

      local new = amount
      if mode == 'incr' then
        if had then new = old + amount end
      elseif mode == 'best' and had then
        if (desc and amount <= old) or (not desc and amount >= old) then new = old end
      end
      -- Exact: |old|, |amount| <= 2^53-1, so a true sum beyond the range
      -- rounds to a double that is still beyond it.
      if new > MAX or new < -MAX then
        reply = '!out_of_range'
        break
      end

      local prev = 0
      if had then
        if not ranked then
          prev = -1 -- not read (the header's record)
        elseif tie == 'shared' then
          prev = call('ZCOUNT', zkey, '(' .. olds, '+inf') + 1
        else
          prev = call('ZREVRANK', zkey, oldz) + 1
        end
      end

      if nScore > 0 and (s ~= cur or not scoreMin or (desc and new or -new) >= scoreMin) then
        if not seen then seen = see(i, j, member, amount, t, s, sl) end
        e.had, e.old, e.new, e.olds, e.oldz, e.prev = had, old, new, olds, oldz, prev
        reply = refusal(onScore, nScore)
        if reply then break end
      end

      local seq
      if nextSeq then
        seq = nextSeq()
      else
        seq = S.seq
        if not seq then
          seq = call('INCR', KEYS[2])
        else
          seq = seq + 1
          S.dirty = true
        end
        S.seq = seq
      end
      local rank, newz = ranked and prev or 0, oldz
      local ns = fmt('%d', new)
      local changed = not (had and new == old)
      if changed then
        -- The score changed (or the member is new): it reaches the score now.
        local z = member
        if tie == 'first' then
          -- Each digit's 9-complement, by halves: 9999999999999999 itself is
          -- not exact in a double, 99999999 is. The first half changes every
          -- 1e8 seqs, so it is formatted once per call.
          local hi = (seq - seq % 1e8) / 1e8
          if hi ~= padHiOf then padHi, padHiOf = fmt('%08d', 99999999 - hi), hi end
          z = padHi .. fmt('%08d', 99999999 - seq % 1e8) .. '|' .. member
        elseif tie == 'last' then
          z = fmt('%016d', seq) .. '|' .. member
        end
        if had and z ~= oldz then call('ZREM', zkey, oldz) end
        local sc = ns -- the stored score (see the header: negated on asc boards)
        if not desc then sc = fmt('%d', -new) end
        call('ZADD', zkey, sc, z)
        if z ~= member then
          if mkey == pm then pmw[member] = z else call('HSET', mkey, member, z) end
        elseif had and oldz ~= member then
          call('HDEL', mkey, member)
          if mkey == pm then pmw[member] = false end
        end
        if ranked then
          if tie == 'shared' then
            rank = call('ZCOUNT', zkey, '(' .. sc, '+inf') + 1
          else
            rank = call('ZREVRANK', zkey, z) + 1
          end
        end
        newz = z
        if not had and sl.exp > now and not (expired and expired[s]) then
          -- Relative to the script's clock, so an injected (test) clock that
          -- is far from the server's still yields the intended lifetime;
          -- once per call and slot (every later event's would set the same).
          expired = expired or {}
          expired[s] = true
          call('PEXPIRE', zkey, sl.exp - now)
          if mkey == pm then
            batchExpire(B, pm, sl.exp - now) -- after the batch's HSET made it
          else
            call('PEXPIRE', mkey, sl.exp - now)
          end
        end
      end

      if nWrite > 0 then
        if not seen then seen = see(i, j, member, amount, t, s, sl) end
        e.had, e.old, e.new, e.ns, e.changed, e.oldz, e.olds, e.newz, e.rank, e.prev, e.seq =
          had, old, new, ns, changed, oldz, olds, newz, rank, prev, seq
        for k = 1, nWrite do onWrite[k](e) end
        rank, prev = e.rank, e.prev
      end
      local name = ARGV[j + 2]
      if name ~= '' then batchSet(B, KEYS[3], member, name) end

      -- Noted last, written after every other write of the call (below):
      -- Redis does not roll a script back, and a record written before a
      -- failing write would turn every retry into a false duplicate.
      local tail = false
      if place then
        local f, pn, pt = place(i, s, sl, member, had, changed, oldz, newz, ns, new)
        rec = ARGV[j + 5] .. ',' .. ns .. ',' .. fmt(f, rank, prev, had and old or 0, seq, pn)
        tail = pt
      else
        rec = ARGV[j + 5] .. ',' .. ns .. ',' .. fmt('%d,%d,%d,%d', rank, prev, had and old or 0, seq) .. ',' .. sl.idx
      end
      if seen then
        if e.extra then rec = rec .. e.extra end
        tail = e.tail or tail
      end
      Rw[Rf[i]] = rec
      if entryTail then tail = ';' .. newz .. ';' .. oldz .. ';' .. R.cur end
      if tail then
        reply = '0' .. rec .. tail
      else
        reply = '0' .. rec
      end
    until true
    if n == 1 then return reply end
    out[i] = reply
  end
  return table.concat(out, '\n')
end

-- The call: run under pcall, then what its events deferred, each written
-- even when another could not be (only a key of the wrong type can make
-- a redis.call fail): the seq, the blocks' finish, the batches, and last
-- the records (prelude's recordsFlush). Every event that completed keeps
-- its writes and its record, as when each event wrote its own; the event
-- that failed part way gets no record (a retry applies it again), and the
-- call answers the first error. A refusal, or a failure, before the events
-- start writes nothing more.
local ok, res = pcall(run, S, newSlot, banDue, recordsOpen, recordGet, batchSet, batchExpire)
if not S.R then
  if ok then return res end
  error(res, 0)
end
local fok, ferr
if S.dirty then
  fok, ferr = pcall(redis.call, 'SET', KEYS[2], string.format('%d', S.seq))
  if ok and not fok then ok, res = false, ferr end
end
if S.finish then
  for _, f in ipairs(S.finish) do
    fok, ferr = pcall(f)
    if ok and not fok then ok, res = false, ferr end
  end
end
ferr = batchFlush(S)
if ok and ferr then ok, res = false, ferr end
fok, ferr = pcall(recordsFlush, S.R)
if ok and not fok then ok, res = false, ferr end
if not ok then return redis.error_reply(tostring(res)) end
return res
