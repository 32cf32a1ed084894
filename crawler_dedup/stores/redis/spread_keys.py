"""The spread layout's key names and the scripts it runs on one key (spread.py, growth.py).

Every key starts with the prefix `P`: `P:d:<doc id>` a record, `P:f:<URL key>` what a response left
for the URL's next conditional request, `P:h<family><generation>:<count>:<shard>`
the shards (a field: a table's 2-byte code and the entry's key), `{P}:m` the meta hash (the meta
table, the counters, the claims as `\x00c<doc id>` fields).
"""

from __future__ import annotations

import xxhash

# (a meta hash without its `layout` field was lost, a node restarted without persistence: the
# counters and claims would start over under ids and orders given already, so the scripts refuse
# with NOMETA; store.py refuses such an index at open)
# Redis 7 (allow-cross-slot-keys, nodes.py `Nodes.write`): a commit's commands for one node in one
# command, keys of many slots, none declared (the node never redirects it). ARGV: each command as
# its length then its words; PACKED name field ttl n adds.. removes.. is the packed script below,
# NXPACKED name field ttl n adds.. creates the field (HSETNX, cheaper) or merges into it. A reply
# each: 1 for a status, 0 for none, -1 where the node cannot serve the key now (nothing written:
# the command is sent again on its own, which follows the redirection).
WRITE = """#!lua flags=allow-cross-slot-keys
local function packed(key, field, ttl, n, a, b)
  local cur = redis.call('HGET', key, field) or ''
  local set = {}
  for i = 1, #cur, 8 do set[string.sub(cur, i, i + 7)] = true end
  for i = a, a + n - 1 do set[ARGV[i]] = true end
  for i = a + n, b do set[ARGV[i]] = nil end
  local vals = {}
  for v in pairs(set) do vals[#vals + 1] = v end
  table.sort(vals)
  if #vals == 0 then redis.call('HDEL', key, field) else redis.call('HSET', key, field, table.concat(vals)) end
  if ttl > 0 and #vals > 0 then redis.call('PEXPIRE', key, ttl) end
  return #vals
end
local function one(a, b)
  local op = ARGV[a]
  if op == 'PACKED' then
    return packed(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), a + 5, b)
  elseif op == 'NXPACKED' then
    local n = tonumber(ARGV[a + 4])
    local vals = {}
    for i = a + 5, a + 4 + n do vals[#vals + 1] = ARGV[i] end
    if redis.call('HSETNX', ARGV[a + 1], ARGV[a + 2], table.concat(vals)) == 1 then
      if tonumber(ARGV[a + 3]) > 0 then redis.call('PEXPIRE', ARGV[a + 1], ARGV[a + 3]) end
      return 1
    end
    packed(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), n, a + 5, b)
    return 0
  end
  local cmd = {}
  for i = a, b do cmd[#cmd + 1] = ARGV[i] end
  return redis.call(unpack(cmd))
end
local out, i = {}, 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local ok, v = pcall(one, i + 1, i + n)
  i = i + n + 1
  if not ok then v = -1 elseif type(v) == 'table' then v = 1 elseif not v then v = 0 end
  out[#out + 1] = v
end
return out
"""

SCRIPTS = {
    # KEYS[1] a shard; ARGV: field, TTL ms, number of values to add, the values to add, the values to remove
    "packed": """
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
local set = {}
for i = 1, #cur, 8 do set[string.sub(cur, i, i + 7)] = true end
local n = tonumber(ARGV[3])
for i = 4, 3 + n do set[ARGV[i]] = true end
for i = 4 + n, #ARGV do set[ARGV[i]] = nil end
local vals = {}
for v in pairs(set) do vals[#vals + 1] = v end
table.sort(vals)
if #vals == 0 then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], table.concat(vals)) end
if tonumber(ARGV[2]) > 0 and #vals > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return #vals
""",
    # KEYS[1] a shard; ARGV: field, value. The field deleted if it still holds that value (a move
    # taken back for an entry removed while it was moved: growth.py)
    "hdel_if": """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
""",
    # KEYS[1] a key; ARGV[1] a value. The key deleted if it still holds that value (a write journal
    # finished by another crawler: journal.py)
    "del_if": """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
""",
    # KEYS[1] a hash (ARGV[1] its field) or a string (ARGV[1] ''); ARGV[2] by, ARGV[3] start; ARGV[4]
    # a field the hash must have ('layout' in the meta hash: one without it was lost), or ''. A
    # counter as the contract keeps it, 8 bytes big-endian (exact to 2^53)
    "incr": """
if ARGV[4] ~= '' and redis.call('HEXISTS', KEYS[1], ARGV[4]) == 0 then return redis.error_reply('NOMETA the index meta hash is gone (a node restarted without persistence?)') end
local cur
if ARGV[1] == '' then cur = redis.call('GET', KEYS[1]) else cur = redis.call('HGET', KEYS[1], ARGV[1]) end
local v = tonumber(ARGV[3])
if cur and #cur == 8 then
  v = 0
  for i = 1, 8 do v = v * 256 + string.byte(cur, i) end
end
v = v + tonumber(ARGV[2])
local out, x = '', v
for i = 1, 8 do
  out = string.char(x % 256) .. out
  x = math.floor(x / 256)
end
if ARGV[1] == '' then redis.call('SET', KEYS[1], out) else redis.call('HSET', KEYS[1], ARGV[1], out) end
return v
""",
    # KEYS[1] the meta hash. Claims, in order, for one page or a batch's pages at once (so no
    # other page claims between them). Each page's order comes from one counter, atomic with its
    # record; a page claimed already keeps its order (a command sent again after a lost reply gets
    # the order it got). Each claim also notes its doc id and the server's time under its order
    # (`\0o<order>`) and prunes the two oldest claims past ARGV[1] seconds: claims are kept by
    # age, however many pages a second are filed. Then six values a page: its claim field, its doc
    # id, '1' when it may claim quietly, the order it gets if no other page claimed since this
    # process's last claim before its filing's first reads (claims.py `confirm`) or '', what its
    # filing wrote (spread_claims.py `Filing.wrote`, noted under its new order `\0w<order>`, the
    # last 256 orders') and what it read or wrote (`Filing.looks`, hashed the same way). A quiet
    # page that got the order expected is confirmed at once (`k`, a quiet claim); so is one whose
    # expected order is below its own when the pages claimed from there (up to 64, each having
    # noted what it wrote; its batch's earlier pages among them) wrote nothing it read or wrote
    # (`apart`: a look would read it all as it was). Reply: the shard map as it is now (4 values:
    # the second look reads every level a page may be in), then a page each its order, 1 when
    # confirmed, 1 when apart. One key, so it runs while its slot moves (a script of several keys
    # waits)
    "claim": """
if redis.call('HEXISTS', KEYS[1], 'layout') == 0 then return redis.error_reply('NOMETA the index meta hash is gone (a node restarted without persistence?)') end
local now = tonumber(redis.call('TIME')[1])
local function f(name) return redis.call('HGET', KEYS[1], name) or false end
local out = {f('shards'), f('growing'), f('sweeping'), f('since')}
local from, to, wrote, unnoted = nil, nil, {}, false
for at = 2, #ARGV, 6 do
  local field, asks, e, mine = ARGV[at], ARGV[at + 2] == '1', tonumber(ARGV[at + 3]), ARGV[at + 5]
  local got = redis.call('HGET', KEYS[1], field)
  local o
  local fresh = false
  if got then o = tonumber(string.match(got, '^%d+')) else
    fresh = true
    o = redis.call('HINCRBY', KEYS[1], 'claims', 1)
    local mark = ''
    if asks and e and o == e then mark = 'k' end
    redis.call('HSET', KEYS[1], field, o .. mark, '\0o' .. o, ARGV[at + 1] .. ':' .. now)
    got = o .. mark
  end
  local p = tonumber(redis.call('HGET', KEYS[1], 'pruned') or '0')
  for i = 1, 2 do
    if p + 1 >= o then break end
    local seen = redis.call('HGET', KEYS[1], '\0o' .. (p + 1))
    if seen then
      local d, t = string.match(seen, '^(%d+):(%d+)$')
      if t and now - tonumber(t) < tonumber(ARGV[1]) then break end
      if d then redis.call('HDEL', KEYS[1], '\0c' .. d) end
      redis.call('HDEL', KEYS[1], '\0o' .. (p + 1))
    end
    p = p + 1
    redis.call('HSET', KEYS[1], 'pruned', p)
  end
  if fresh then
    if ARGV[at + 4] ~= '' then redis.call('HSET', KEYS[1], '\0w' .. o, ARGV[at + 4]) end
    redis.call('HDEL', KEYS[1], '\0w' .. (o - 256))
  end
  local apart = false
  if asks and e and e < o and o - e <= 64 and mine ~= '' and string.sub(got, -1) ~= 'k' then
    if e ~= from then from, to, wrote, unnoted = e, e - 1, {}, false end
    while to < o - 1 and not unnoted do  -- (what the pages claimed from e on wrote: once for a batch)
      to = to + 1
      local w = redis.call('HGET', KEYS[1], '\0w' .. to)
      if not w then unnoted = true else
        for i = 1, #w, 8 do wrote[string.sub(w, i, i + 7)] = true end
      end
    end
    apart = not unnoted
    if apart then
      for i = 1, #mine, 8 do
        if wrote[string.sub(mine, i, i + 7)] then apart = false break end
      end
    end
    if apart then
      got = o .. 'k'
      redis.call('HSET', KEYS[1], field, got)
    end
  end
  out[#out + 1] = o
  out[#out + 1] = string.sub(got, -1) == 'k' and 1 or 0
  out[#out + 1] = apart and 1 or 0
end
return out
""",
    # KEYS[1] the meta hash; ARGV[1] the claim field. The page stays: its order marked `k`
    "confirm": """
local got = redis.call('HGET', KEYS[1], ARGV[1])
if not got then return 0 end
local o = string.match(got, '^%d+')
redis.call('HSET', KEYS[1], ARGV[1], o .. 'k')
return 1
""",
}


# tables whose entries are keys of their own (a record, a response's copy: too long for a packed
# hash), under these marks after the prefix. A fetch entry without a copy of its body (Redis's
# default: DEDUP_CONDITIONAL_COPY=auto) is short: it goes to shards of its own family instead,
# and is looked up in both places
OWN_KEYS = {"docs": b":d:", "fetches": b":f:"}
PACKABLE = frozenset(("fetches",))

GENERATIONS = 3  # with DEDUP_WINDOW, generations a read looks in: a window and a half
MAX_GENERATIONS = 64  # (a window made much longer than the one the index began with)


def generation_ms(ttl_ms: int) -> int:
    """A generation: a quarter of the keys' TTL (twice the window), so half a window."""
    return max(1, ttl_ms // 4)


def generation_ttl(ttl_ms: int) -> int:
    """A generation's keys live from its start until its last entry is a window and a half old
    (the TTL renewed on each write: the generation's end plus the keys' TTL minus a generation)."""
    return ttl_ms - generation_ms(ttl_ms)


# the meta hash's fields that are the store's, not the index's (the claims' are b"\x00c...", b"\x00o..."): left out of a scan
STORE_FIELDS = frozenset((b"claims", b"pruned", b"gen", b"layout", b"shards", b"growing", b"sweeping", b"since", b"left", b"cursor",
                          b"entries", b"grown_at", b"moved"))  # (the last two: growth before its leases)


# Redis packs a hash only while every value is 64 bytes or less: a table whose lists grow longer
# than 8 doc ids (mins: up to POSTING_LIMIT) has shards of its own, so the others stay packed
LONG_TABLES = frozenset(("mins",))
FAMILIES = (b"", b"m", b"b", b"f")


def family(table: str) -> bytes:
    """The shards a table's entries go to: the postings' (long lists), the simhash buckets' (their
    lists grow with the index past 8 fingerprints: 10^7 pages fill 2^16 buckets 150 deep), the
    fetch entries' (a long ETag makes a value past 64 bytes), the rest."""
    if table in LONG_TABLES:
        return b"m"
    if table in PACKABLE:
        return b"f"
    return b"b" if table[:1] == "t" and table[1:].isdigit() else b""


def shard_name(prefix: bytes, gen: bytes, count: int, shard: int) -> bytes:
    """A shard's key: its family and generation (`gen`: FAMILIES' mark, then DEDUP_WINDOW's), its
    level (the shard count), its number."""
    return prefix + b":h" + gen + b":" + str(count).encode() + b":" + shard.to_bytes(4, "big")


CLAIM = b"\x00c"  # the start of a claim's field in the meta hash


def claim_field(doc_id: int) -> bytes:
    """A claim's field in the meta hash (the index's own meta keys are words, never this)."""
    return CLAIM + str(doc_id).encode()


def table_code(table: str) -> bytes:
    """A table's 2 bytes at the start of its fields (ensure() checks that no two tables share one)."""
    return xxhash.xxh32_intdigest(table.encode()).to_bytes(4, "big")[:2]


def escape(pattern: bytes) -> bytes:
    """A key prefix as a SCAN MATCH pattern (its glob characters taken literally)."""
    out = b""
    for c in pattern:
        ch = bytes([c])
        out += b"\\" + ch if ch in b"*?[]\\" else ch
    return out
