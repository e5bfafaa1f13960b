-- The dissector's engine: everything but the definition's tables, which `render` puts above it.
-- Tested with Wireshark 4.0 (Lua 5.2). Protocols: `sparkwire` (sparkwire's own wire: frames, the
-- handshake, envelopes, every message of the definition) and `sparkrpc` (Spark's transport frames
-- and NettyRpcEnv's RequestMessage). Both are found by heuristics on any TCP port.

local HANDSHAKE_LIMIT = 65536
local FRAME_LIMIT = 134217728
local MAX_DEPTH = 64

-- Enumerations, as sets, and message tables by family.
for _, t in pairs(TYPES) do
  if t.kind == "enum" then
    t.set = {}
    for _, v in ipairs(t.values) do t.set[v] = true end
  elseif t.kind == "union" then
    t.by_name = {}
    for _, v in ipairs(t.variants) do t.by_name[v.name] = v end
  end
end

------------------------------------------------------------------------------------------------
-- Protocols, fields, expert infos
------------------------------------------------------------------------------------------------

local p_sw = Proto("sparkwire", "sparkwire protocol")
local p_spark = Proto("sparkrpc", "Spark RPC (Netty transport)")

local F = {
  length = ProtoField.uint32("sparkwire.length", "Length", base.DEC),
  too_large = ProtoField.uint32("sparkwire.too_large", "Frame over the limit, declared length", base.DEC),
  lost = ProtoField.uint32("sparkwire.lost", "Bytes after the framing was lost", base.DEC),
  handshake = ProtoField.string("sparkwire.handshake", "Handshake frame"),
  hs_magic = ProtoField.string("sparkwire.handshake.magic", "Magic"),
  hs_versions = ProtoField.string("sparkwire.handshake.versions", "Versions"),
  hs_role = ProtoField.string("sparkwire.handshake.role", "Role"),
  hs_id = ProtoField.string("sparkwire.handshake.id", "Id"),
  hs_auth = ProtoField.string("sparkwire.handshake.auth", "Authentication"),
  hs_nonce = ProtoField.bytes("sparkwire.handshake.nonce", "Nonce"),
  hs_challenge = ProtoField.string("sparkwire.handshake.challenge", "Challenge"),
  hs_proof = ProtoField.bytes("sparkwire.handshake.proof", "Proof"),
  hs_admin = ProtoField.bytes("sparkwire.handshake.admin", "Admin proof"),
  hs_version = ProtoField.uint32("sparkwire.handshake.version", "Version chosen", base.DEC),
  hs_refused = ProtoField.string("sparkwire.handshake.refused", "Refused"),
  hs_message = ProtoField.string("sparkwire.handshake.message", "Refusal message"),
  hs_key = ProtoField.string("sparkwire.handshake.key", "Other key"),
  version = ProtoField.uint8("sparkwire.version", "Protocol version", base.DEC),
  family = ProtoField.string("sparkwire.family", "Family"),
  envelope = ProtoField.string("sparkwire.envelope", "Envelope"),
  id = ProtoField.string("sparkwire.id", "Ask id"),
  reply = ProtoField.string("sparkwire.reply", "Reply kind"),
  message = ProtoField.string("sparkwire.message", "Message"),
  field = ProtoField.string("sparkwire.field", "Field"),
  skipped = ProtoField.string("sparkwire.skipped", "Unknown key, skipped"),
  json = ProtoField.string("sparkwire.json", "Value (JSON)"),
  task = ProtoField.string("sparkwire.task", "Task description (JSON)"),
  error = ProtoField.string("sparkwire.error", "Decode error"),
  error_detail = ProtoField.string("sparkwire.error.detail", "Error detail"),
  response_to = ProtoField.framenum("sparkwire.response_to", "Answers the ask in frame", base.NONE, frametype.RESPONSE),
}
p_sw.fields = {}
for _, f in pairs(F) do table.insert(p_sw.fields, f) end

local ERROR_KINDS = {
  "InvalidMessagePack", "TooDeep", "TrailingBytes", "BadEnvelope",
  "UnknownMessage", "NotInVersion", "LocalMessage", "InvalidFields",
}
local E = {}
local experts = {}
for _, k in ipairs(ERROR_KINDS) do
  local abbrev = "sparkwire.error." .. k:gsub("(%l)(%u)", "%1_%2"):lower()
  E[k] = ProtoExpert.new(abbrev, k, expert.group.MALFORMED, expert.severity.ERROR)
  table.insert(experts, E[k])
end
E.too_large = ProtoExpert.new("sparkwire.frame_too_large", "Frame over the limit", expert.group.MALFORMED, expert.severity.ERROR)
E.bad_handshake = ProtoExpert.new("sparkwire.bad_handshake", "Malformed handshake frame", expert.group.MALFORMED, expert.severity.ERROR)
E.refused = ProtoExpert.new("sparkwire.refused", "Handshake refused", expert.group.RESPONSE_CODE, expert.severity.WARN)
E.after_refusal = ProtoExpert.new("sparkwire.after_refusal", "Frame after a refused handshake", expert.group.PROTOCOL, expert.severity.WARN)
E.task = ProtoExpert.new("sparkwire.task_description", "LaunchTask.data is not a TaskDescription", expert.group.MALFORMED, expert.severity.WARN)
E.no_handshake = ProtoExpert.new("sparkwire.no_handshake", "Handshake not captured: version and family guessed", expert.group.UNDECODED, expert.severity.NOTE)
for _, k in ipairs({"too_large", "bad_handshake", "refused", "after_refusal", "no_handshake", "task"}) do
  table.insert(experts, E[k])
end
p_sw.experts = experts

local default_version = Pref.uint("Version without a handshake", 2,
  "Protocol version used for a connection whose handshake is not in the capture")
p_sw.prefs.version = default_version

local SPARK_TYPES = {
  [0] = "ChunkFetchRequest", [1] = "ChunkFetchSuccess", [2] = "ChunkFetchFailure",
  [3] = "RpcRequest", [4] = "RpcResponse", [5] = "RpcFailure", [6] = "StreamRequest",
  [7] = "StreamResponse", [8] = "StreamFailure", [9] = "OneWayMessage", [10] = "UploadStream",
  [11] = "MergedBlockMetaRequest", [12] = "MergedBlockMetaSuccess",
}
local BLOCK_TRANSFER = {
  [0] = "OpenBlocks", [1] = "UploadBlock", [2] = "RegisterExecutor", [3] = "StreamHandle",
  [4] = "mesos.RegisterDriver", [5] = "mesos.ShuffleServiceHeartbeat", [6] = "UploadBlockStream",
  [7] = "RemoveBlocks", [8] = "BlocksRemoved", [9] = "FetchShuffleBlocks",
  [10] = "GetLocalDirsForExecutors", [11] = "LocalDirsForExecutors", [12] = "PushBlockStream",
  [13] = "FinalizeShuffleMerge", [14] = "MergeStatuses", [15] = "BlockPushReturnCode",
  [16] = "RemoveShuffleMerge", [17] = "FetchShuffleBlockChunks", [18] = "DiagnoseCorruption",
  [19] = "CorruptionCause",
}

local SF = {
  length = ProtoField.uint64("sparkrpc.length", "Frame length", base.DEC),
  type = ProtoField.uint8("sparkrpc.type", "Frame type", base.DEC, SPARK_TYPES),
  request_id = ProtoField.int64("sparkrpc.request_id", "Request id", base.DEC),
  body_length = ProtoField.int32("sparkrpc.body_length", "Body length", base.DEC),
  sender = ProtoField.string("sparkrpc.sender", "Sender address"),
  receiver = ProtoField.string("sparkrpc.receiver", "Receiver address"),
  endpoint = ProtoField.string("sparkrpc.endpoint", "Endpoint name"),
  class = ProtoField.string("sparkrpc.class", "Content class"),
  descriptor = ProtoField.string("sparkrpc.descriptor", "First class descriptor"),
  error = ProtoField.string("sparkrpc.error", "Error"),
  stream = ProtoField.string("sparkrpc.stream", "Stream"),
  chunk = ProtoField.int32("sparkrpc.chunk", "Chunk index", base.DEC),
  stream_data = ProtoField.uint64("sparkrpc.stream_data", "Stream data bytes", base.DEC),
  body = ProtoField.bytes("sparkrpc.body", "Body"),
  response_to = ProtoField.framenum("sparkrpc.response_to", "Answers the request in frame", base.NONE, frametype.RESPONSE),
  request_endpoint = ProtoField.string("sparkrpc.request_endpoint", "Request's endpoint"),
  request_class = ProtoField.string("sparkrpc.request_class", "Request's class"),
}
p_spark.fields = {}
for _, f in pairs(SF) do table.insert(p_spark.fields, f) end
local SE = {
  malformed = ProtoExpert.new("sparkrpc.malformed", "Malformed Spark frame", expert.group.MALFORMED, expert.severity.ERROR),
  lost = ProtoExpert.new("sparkrpc.lost", "Framing lost", expert.group.MALFORMED, expert.severity.ERROR),
  unpaired = ProtoExpert.new("sparkrpc.unpaired", "Response to a request not captured", expert.group.SEQUENCE, expert.severity.NOTE),
  failure = ProtoExpert.new("sparkrpc.failure", "RPC failed", expert.group.RESPONSE_CODE, expert.severity.WARN),
}
p_spark.experts = {SE.malformed, SE.lost, SE.unpaired, SE.failure}

local f_tcp_stream = Field.new("tcp.stream")

------------------------------------------------------------------------------------------------
-- Small helpers
------------------------------------------------------------------------------------------------

local function fail(kind, detail)
  error({kind = kind, detail = detail}, 0)
end

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

local function json_str(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end


local function valid_utf8(s)
  local i, n = 1, #s
  while i <= n do
    local c = s:byte(i)
    local extra
    if c < 0x80 then extra = 0
    elseif c >= 0xc2 and c <= 0xdf then extra = 1
    elseif c >= 0xe0 and c <= 0xef then extra = 2
    elseif c >= 0xf0 and c <= 0xf4 then extra = 3
    else return false end
    if i + extra > n then return false end
    for j = 1, extra do
      local d = s:byte(i + j)
      if d < 0x80 or d > 0xbf then return false end
    end
    if extra == 2 then
      local d = s:byte(i + 1)
      if (c == 0xe0 and d < 0xa0) or (c == 0xed and d > 0x9f) then return false end
    elseif extra == 3 then
      local d = s:byte(i + 1)
      if (c == 0xf0 and d < 0x90) or (c == 0xf4 and d > 0x8f) then return false end
    end
    i = i + extra + 1
  end
  return true
end

-- Text that is safe to show: control characters as `?`, and the bytes of text that is not UTF-8
-- as `\xNN` (Wireshark's JSON and PDML output need valid UTF-8).
local function safe(s)
  if not valid_utf8(s) then
    s = s:gsub("[\128-\255]", function(c) return string.format("\\x%02x", c:byte()) end)
  end
  return (s:gsub("%c", "?"))
end

-- A string for a tree label: quoted, shortened.
local function show_str(s)
  if #s > 120 then s = s:sub(1, 117) .. "..." end
  return '"' .. safe(s) .. '"'
end

-- Byte order of two strings (Lua's `<` follows the locale).
local function bytes_cmp(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x < y and -1 or 1 end
  end
  if #a == #b then return 0 end
  return #a < #b and -1 or 1
end

-- Order of two integers written in decimal.
local function int_cmp(a, b)
  local an, bn = a:sub(1, 1) == "-", b:sub(1, 1) == "-"
  if an ~= bn then return an and -1 or 1 end
  local x, y = an and a:sub(2) or a, bn and b:sub(2) or b
  local c
  if #x ~= #y then c = #x < #y and -1 or 1 else c = bytes_cmp(x, y) end
  return an and -c or c
end

local function fits(text, lo, hi)
  return int_cmp(text, lo) >= 0 and int_cmp(text, hi) <= 0
end

local function fmt_float(x)
  if x ~= x then return "NaN" end
  if x == math.floor(x) and math.abs(x) < 1e15 then return string.format("%.1f", x) end
  return string.format("%.17g", x)
end

local function describe(node)
  if node.t == "int" then return "integer " .. node.text end
  if node.t == "str" then return "string " .. show_str(node.s) end
  if node.t == "float" then return "float " .. fmt_float(node.f) end
  if node.t == "bool" then return node.b and "true" or "false" end
  return node.t
end

------------------------------------------------------------------------------------------------
-- MessagePack: the whole value is read first (SPEC §11.2 step 1), into nodes with offsets
------------------------------------------------------------------------------------------------

local function read_value(tvb, off, stop, depth)
  local function need(n)
    if off + n > stop then
      fail("InvalidMessagePack", string.format("a value at byte %d runs past the end of the frame", off))
    end
  end
  need(1)
  local b = tvb(off, 1):uint()
  local function int(n, v, text)
    return {t = "int", off = off, len = n, num = v, text = text or string.format("%.0f", v)}
  end
  local function blob(t, hdr, n)
    need(hdr + n)
    local s = n > 0 and tvb:raw(off + hdr, n) or ""
    return {t = t, off = off, len = hdr + n, s = s, soff = off + hdr, slen = n}
  end
  local function container(t, hdr, count)
    if depth + 1 > MAX_DEPTH then
      fail("TooDeep", string.format("arrays and maps nest deeper than %d levels", MAX_DEPTH))
    end
    need(hdr)
    local per = t == "map" and 2 or 1
    if count * per > stop - off - hdr then
      fail("InvalidMessagePack", string.format("a %s declares %d elements but only %d bytes remain",
        t, count, stop - off - hdr))
    end
    local node = {t = t, off = off}
    local pos = off + hdr
    if t == "array" then
      node.items = {}
      for i = 1, count do
        local v = read_value(tvb, pos, stop, depth + 1)
        node.items[i] = v
        pos = v.off + v.len
      end
    else
      node.entries = {}
      for i = 1, count do
        local k = read_value(tvb, pos, stop, depth + 1)
        pos = k.off + k.len
        local v = read_value(tvb, pos, stop, depth + 1)
        pos = v.off + v.len
        node.entries[i] = {k = k, v = v}
      end
    end
    node.len = pos - off
    return node
  end
  if b <= 0x7f then return int(1, b) end
  if b >= 0xe0 then return int(1, b - 256) end
  if b <= 0x8f then return container("map", 1, b - 0x80) end
  if b <= 0x9f then return container("array", 1, b - 0x90) end
  if b <= 0xbf then return blob("str", 1, b - 0xa0) end
  if b == 0xc0 then return {t = "nil", off = off, len = 1} end
  if b == 0xc1 then fail("InvalidMessagePack", "the reserved marker 0xc1") end
  if b == 0xc2 or b == 0xc3 then return {t = "bool", off = off, len = 1, b = b == 0xc3} end
  if b == 0xc4 then need(2); return blob("bin", 2, tvb(off + 1, 1):uint()) end
  if b == 0xc5 then need(3); return blob("bin", 3, tvb(off + 1, 2):uint()) end
  if b == 0xc6 then need(5); return blob("bin", 5, tvb(off + 1, 4):uint()) end
  if (b >= 0xc7 and b <= 0xc9) or (b >= 0xd4 and b <= 0xd8) then
    fail("InvalidMessagePack", string.format("an extension type (marker 0x%02x)", b))
  end
  if b == 0xca then need(5); return {t = "float", off = off, len = 5, f = tvb(off + 1, 4):float(), f32 = true} end
  if b == 0xcb then need(9); return {t = "float", off = off, len = 9, f = tvb(off + 1, 8):float()} end
  if b == 0xcc then need(2); return int(2, tvb(off + 1, 1):uint()) end
  if b == 0xcd then need(3); return int(3, tvb(off + 1, 2):uint()) end
  if b == 0xce then need(5); return int(5, tvb(off + 1, 4):uint()) end
  if b == 0xcf then
    need(9)
    local v = tvb(off + 1, 8):uint64()
    return int(9, v:tonumber(), tostring(v))
  end
  if b == 0xd0 then need(2); return int(2, tvb(off + 1, 1):int()) end
  if b == 0xd1 then need(3); return int(3, tvb(off + 1, 2):int()) end
  if b == 0xd2 then need(5); return int(5, tvb(off + 1, 4):int()) end
  if b == 0xd3 then
    need(9)
    local v = tvb(off + 1, 8):int64()
    return int(9, v:tonumber(), tostring(v))
  end
  if b == 0xd9 then need(2); return blob("str", 2, tvb(off + 1, 1):uint()) end
  if b == 0xda then need(3); return blob("str", 3, tvb(off + 1, 2):uint()) end
  if b == 0xdb then need(5); return blob("str", 5, tvb(off + 1, 4):uint()) end
  if b == 0xdc then need(3); return container("array", 3, tvb(off + 1, 2):uint()) end
  if b == 0xdd then need(5); return container("array", 5, tvb(off + 1, 4):uint()) end
  if b == 0xde then need(3); return container("map", 3, tvb(off + 1, 2):uint()) end
  return container("map", 5, (function() need(5); return tvb(off + 1, 4):uint() end)())
end

------------------------------------------------------------------------------------------------
-- Values by their type expressions (SPEC §4.1): checked, shown in the tree, rendered as JSON
------------------------------------------------------------------------------------------------

local function exists(f, version)
  return (f.since == nil or version >= f.since) and (f.till == nil or version <= f.till)
end

local function range(tvb, node)
  return tvb(node.off, node.len)
end

local decode_value
local decode_fields

-- Bytes fields whose content the protocol defines (SPEC §10): shown decoded beneath them. Not
-- part of the frame's validity: a frame decoder leaves them to the executor.
local EMBEDDED = {["LaunchTask.data"] = "TaskDescription"}
-- Where the frame being decoded keeps what it found (its `out` table).
local current_out = nil

local function decode_embedded(type_name, node, version, item, tvb)
  local stop = node.soff + node.slen
  local ok, err = pcall(function()
    local root = read_value(tvb, node.soff, stop, 0)
    if root.off + root.len < stop then
      fail("TrailingBytes", string.format("%d byte(s) follow the value", stop - root.off - root.len))
    end
    local sub = item:add(F.field, tvb(node.soff, node.slen), type_name)
    sub:set_text(type_name .. " (SPEC §10)")
    local json = decode_fields(TYPES[type_name].fields, root, version, sub, tvb, type_name)
    if current_out then current_out.embedded = json end
  end)
  if not ok then
    if type(err) ~= "table" then error(err, 0) end
    item:add_proto_expert_info(E.task, "not a " .. type_name .. ": " .. err.kind .. ": " .. err.detail)
  end
end

decode_fields = function(fields, node, version, tree, tvb, path)
  if node.t == "array" then
    fail("InvalidFields", path .. ": fields written as an array of values instead of a map")
  end
  if node.t ~= "map" then
    fail("InvalidFields", path .. ": expected a map of fields, found " .. describe(node))
  end
  local values, seen = {}, {}
  for _, e in ipairs(node.entries) do
    if e.k.t ~= "str" then
      fail("InvalidFields", path .. ": a field name that is not a string (" .. describe(e.k) .. ")")
    end
    local name = e.k.s
    local def
    for _, f in ipairs(fields) do
      if f.name == name and exists(f, version) then def = f; break end
    end
    if def == nil then
      if tree then
        tree:add(F.skipped, tvb(e.k.off, e.v.off + e.v.len - e.k.off), safe(name))
          :set_text("Unknown key " .. show_str(name) .. ": skipped, not examined")
      end
    else
      if seen[name] then fail("InvalidFields", path .. ": field " .. name .. " given twice") end
      seen[name] = true
      local item = tree and tree:add(F.field, tvb(e.k.off, e.v.off + e.v.len - e.k.off), name)
      values[name] = decode_value(def.ty, e.v, version, item, tvb, path .. "." .. name,
        name .. " (" .. def.tys .. ")")
      local embedded = EMBEDDED[path .. "." .. name]
      if item and embedded and e.v.t == "bin" and e.v.slen > 0 then
        decode_embedded(embedded, e.v, version, item, tvb)
      end
    end
  end
  local parts = {}
  for _, f in ipairs(fields) do
    if exists(f, version) then
      local v = values[f.name]
      if v == nil then
        if f.ty.k ~= "option" then fail("InvalidFields", path .. ": missing field " .. f.name) end
        v = "null"
      end
      parts[#parts + 1] = json_str(f.name) .. ":" .. v
    end
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- The order of two decoded scalars (set elements, map keys).
local function scalar_cmp(a, b)
  if a.t == "str" and b.t == "str" then return bytes_cmp(a.s, b.s) end
  if a.t == "int" and b.t == "int" then return int_cmp(a.text, b.text) end
  if a.t == "float" and b.t == "float" then
    if a.f == b.f then return 0 end
    return a.f < b.f and -1 or 1
  end
  if a.t == "bool" and b.t == "bool" then
    if a.b == b.b then return 0 end
    return a.b and 1 or -1
  end
  return nil
end

decode_value = function(ty, node, version, item, tvb, path, label)
  local k = ty.k
  local function bad(msg) fail("InvalidFields", path .. ": " .. msg) end
  local function show(text) if item then item:set_text(label .. ": " .. text) end end
  if k == "option" then
    if node.t == "nil" then show("nil"); return "null" end
    return decode_value(ty.t, node, version, item, tvb, path, label)
  elseif k == "string" then
    if node.t ~= "str" then bad("expected a string, found " .. describe(node)) end
    if not valid_utf8(node.s) then bad("a string that is not UTF-8") end
    show(show_str(node.s))
    return json_str(node.s)
  elseif k == "bool" then
    if node.t ~= "bool" then bad("expected a bool, found " .. describe(node)) end
    show(node.b and "true" or "false")
    return node.b and "true" or "false"
  elseif k == "i32" or k == "i64" then
    if node.t ~= "int" then bad("expected an integer, found " .. describe(node)) end
    if k == "i32" and not fits(node.text, "-2147483648", "2147483647") then
      bad("integer " .. node.text .. " does not fit i32")
    end
    if k == "i64" and not fits(node.text, "-9223372036854775808", "9223372036854775807") then
      bad("integer " .. node.text .. " does not fit i64")
    end
    show(node.text)
    return node.text
  elseif k == "f64" then
    if node.t ~= "float" then bad("expected a float, found " .. describe(node)) end
    local x = node.f
    if x ~= x or x == math.huge or x == -math.huge then bad("a float that is not finite") end
    show(fmt_float(x) .. (node.f32 and " (float 32)" or ""))
    return fmt_float(x)
  elseif k == "bytes" then
    if node.t ~= "bin" then bad("expected bin, found " .. describe(node)) end
    show(node.slen .. " bytes" .. (node.slen > 0 and (": " .. hex(node.s:sub(1, 32)) .. (node.slen > 32 and "..." or "")) or ""))
    return json_str(hex(node.s))
  elseif k == "list" or k == "set" or k == "tuple" then
    if node.t ~= "array" then bad("expected an array, found " .. describe(node)) end
    if k == "tuple" and #node.items ~= #ty.ts then
      bad(string.format("a tuple of %d elements, found %d", #ty.ts, #node.items))
    end
    show(#node.items .. (#node.items == 1 and " element" or " elements"))
    local parts = {}
    for i, el in ipairs(node.items) do
      local sub = item and item:add(F.field, range(tvb, el), "[" .. (i - 1) .. "]")
      local et = k == "tuple" and ty.ts[i] or ty.t
      parts[i] = decode_value(et, el, version, sub, tvb, path .. "[" .. (i - 1) .. "]", "[" .. (i - 1) .. "]")
      if k == "set" and i > 1 then
        local c = scalar_cmp(node.items[i - 1], el)
        if c == nil then bad("set elements that cannot be ordered") end
        if c == 0 then bad("a set element given twice") end
        if c > 0 then bad("set elements out of order") end
      end
    end
    return "[" .. table.concat(parts, ",") .. "]"
  elseif k == "map" then
    if node.t ~= "map" then bad("expected a map, found " .. describe(node)) end
    show(#node.entries .. (#node.entries == 1 and " entry" or " entries"))
    local parts = {}
    for i, e in ipairs(node.entries) do
      local key
      if ty.a.k == "string" then
        if e.k.t ~= "str" then bad("a map key that is not a string (" .. describe(e.k) .. ")") end
        if not valid_utf8(e.k.s) then bad("a map key that is not UTF-8") end
        key = e.k.s
      else
        if e.k.t ~= "int" then bad("a map key that is not an integer (" .. describe(e.k) .. ")") end
        local lo, hi = "-2147483648", "2147483647"
        if ty.a.k == "i64" then lo, hi = "-9223372036854775808", "9223372036854775807" end
        if not fits(e.k.text, lo, hi) then bad("map key " .. e.k.text .. " out of range") end
        key = e.k.text
      end
      if i > 1 then
        local c = scalar_cmp(node.entries[i - 1].k, e.k)
        if c == 0 then bad("map key " .. key .. " given twice") end
        if c > 0 then bad("map keys out of order at " .. key) end
      end
      local sub = item and item:add(F.field, tvb(e.k.off, e.v.off + e.v.len - e.k.off), safe(key))
      parts[i] = json_str(key) .. ":" .. decode_value(ty.b, e.v, version, sub, tvb,
        path .. "[" .. key .. "]", "[" .. show_str(key) .. "]")
    end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif k == "named" then
    local t = TYPES[ty.n]
    if t.kind == "struct" then
      show(ty.n)
      return decode_fields(t.fields, node, version, item, tvb, path)
    elseif t.kind == "enum" then
      if node.t ~= "str" then bad("expected a " .. ty.n .. " name, found " .. describe(node)) end
      if not t.set[node.s] then bad("unknown " .. ty.n .. " value " .. show_str(node.s)) end
      show(node.s)
      return json_str(node.s)
    else
      if node.t ~= "map" or #node.entries ~= 1 then
        bad("a " .. ty.n .. " is a one-entry map {Variant: fields}")
      end
      local e = node.entries[1]
      if e.k.t ~= "str" or not t.by_name[e.k.s] then
        bad("unknown " .. ty.n .. " variant " .. describe(e.k))
      end
      show(ty.n .. "." .. e.k.s)
      local sub = item and item:add(F.field, tvb(e.k.off, e.v.off + e.v.len - e.k.off), e.k.s)
      if sub then sub:set_text(safe(e.k.s)) end
      local fields = decode_fields(t.by_name[e.k.s].fields, e.v, version, sub, tvb, path .. "." .. e.k.s)
      return "{" .. json_str(e.k.s) .. ":" .. fields .. "}"
    end
  end
  bad("type " .. tostring(k) .. " unknown to the dissector")
end

------------------------------------------------------------------------------------------------
-- Envelopes and messages (SPEC §3, §4, §8, §11.2)
------------------------------------------------------------------------------------------------

-- The message `name` of `family`; without a family (no handshake captured), of the family that
-- has it, and when both do (`KillExecutors`), of the first whose fields `fields` fit.
local function lookup_message(family, name, fields, version, tvb)
  if family then return MESSAGES[family] and MESSAGES[family][name], family end
  local first, first_family
  for _, fam in ipairs({"deploy", "coarse"}) do
    local m = MESSAGES[fam][name]
    if m then
      if first == nil then first, first_family = m, fam end
      local ok, err = pcall(decode_fields, m.fields, fields, version, nil, tvb, name)
      if not ok and type(err) ~= "table" then error(err, 0) end
      if ok then return m, fam end
    end
  end
  return first, first_family
end

local function decode_message(node, family, version, tree, tvb, out)
  if node.t ~= "map" then fail("BadEnvelope", "a message is a one-entry map, found " .. describe(node)) end
  if #node.entries ~= 1 then
    fail("BadEnvelope", string.format("a message is a one-entry map, found %d entries", #node.entries))
  end
  local e = node.entries[1]
  if e.k.t ~= "str" then fail("BadEnvelope", "a message name that is not a string (" .. describe(e.k) .. ")") end
  if not valid_utf8(e.k.s) then fail("BadEnvelope", "a message name that is not UTF-8") end
  local name = e.k.s
  local item = tree:add(F.message, range(tvb, node), safe(name))
  out.message = safe(name)
  local m, fam = lookup_message(family, name, e.v, version, tvb)
  if not m then fail("UnknownMessage", "unknown " .. (family or "") .. " message " .. show_str(name)) end
  item:append_text(" (" .. fam .. ", " .. m.kind .. ")")
  if m.kind == "local" then
    fail("LocalMessage", name .. " is a local message: it never crosses a connection")
  end
  if version < m.since then
    fail("NotInVersion", string.format("%s does not exist in protocol %d; it was added in %d", name, version, m.since))
  end
  local fields = decode_fields(m.fields, e.v, version, item, tvb, name)
  return "{" .. json_str(name) .. ":" .. fields .. "}"
end

local REPLY_TYPES = {
  bool = {k = "bool"},
  int = {k = "i32"},
  bytes = {k = "bytes"},
  threadDump = {k = "option", t = {k = "named", n = "ThreadStackTrace"}},
  lossReason = {k = "named", n = "ExecutorLossReason"},
}
local FORMS = {[0] = "send", [1] = "ask", [2] = "reply", [3] = "failure", [4] = "close"}

local function nonneg_int(node)
  return node ~= nil and node.t == "int" and node.text:sub(1, 1) ~= "-"
end

-- Decodes one envelope; fills `out` (form, id, message, reply, json) and raises {kind, detail}.
local function decode_envelope(tvb, off, stop, family, version, tree, out)
  local root = read_value(tvb, off, stop, 0)
  if root.off + root.len < stop then
    fail("TrailingBytes", string.format("%d byte(s) follow the frame's MessagePack value", stop - root.off - root.len))
  end
  if root.t ~= "array" then fail("BadEnvelope", "the envelope is not an array (" .. describe(root) .. ")") end
  local tag = root.items[1]
  if not nonneg_int(tag) then fail("BadEnvelope", "the envelope's tag is not a non-negative integer") end
  local form = #tag.text == 1 and FORMS[tonumber(tag.text)] or nil
  if form == nil then fail("BadEnvelope", "unknown envelope tag " .. tag.text) end
  local expected = (form == "send" or form == "close") and 2 or 3
  if #root.items ~= expected then
    fail("BadEnvelope", string.format("envelope tag %s takes %d elements, found %d", tag.text, expected, #root.items))
  end
  out.form = form
  tree:add(F.envelope, range(tvb, tag), form)
  if form == "send" then
    out.json = decode_message(root.items[2], family, version, tree, tvb, out)
    return
  end
  if form == "close" then
    -- SPEC §8.1: why the sender closes the connection.
    local body = root.items[2]
    local item = tree:add(F.field, range(tvb, body), "reason")
    item:set_text("Close reason (CloseReason)")
    out.json = decode_fields(TYPES.CloseReason.fields, body, version, item, tvb, "close")
    -- SPEC §8.1: an offset is never negative.
    for _, e in ipairs(body.entries or {}) do
      if e.k.t == "str" and e.k.s == "offset" and e.v.t == "int" and not nonneg_int(e.v) then
        fail("InvalidFields", "a close reason's offset is negative")
      end
    end
    return
  end
  local id = root.items[2]
  if not nonneg_int(id) then fail("BadEnvelope", "the envelope's id is not a non-negative integer") end
  out.id = id.text
  tree:add(F.id, range(tvb, id), id.text)
  local body = root.items[3]
  if form == "ask" then
    out.json = decode_message(body, family, version, tree, tvb, out)
  elseif form == "failure" then
    local item = tree:add(F.field, range(tvb, body), "error")
    item:set_text("Error (ErrorDescription)")
    out.json = decode_fields(TYPES.ErrorDescription.fields, body, version, item, tvb, "failure")
  else
    if body.t ~= "map" or #body.entries ~= 1 then
      fail("BadEnvelope", "a reply is a map with exactly one entry (its kind)")
    end
    local e = body.entries[1]
    if e.k.t ~= "str" then fail("BadEnvelope", "a reply kind that is not a string") end
    local kind = e.k.s
    out.reply = kind
    tree:add(F.reply, range(tvb, e.k), safe(kind))
    if kind == "message" then
      out.json = decode_message(e.v, family, version, tree, tvb, out)
    elseif REPLY_TYPES[kind] then
      local item = tree:add(F.field, range(tvb, e.v), kind)
      out.json = "{" .. json_str(kind) .. ":" ..
        decode_value(REPLY_TYPES[kind], e.v, version, item, tvb, kind .. " reply", kind) .. "}"
    else
      fail("BadEnvelope", "unknown reply kind " .. show_str(kind))
    end
  end
end

------------------------------------------------------------------------------------------------
-- Connection state: per TCP stream, snapshotted per packet so that every pass sees the same
------------------------------------------------------------------------------------------------

local conversations = {}   -- stream key -> live state (first pass)
local snapshots = {}       -- protocol .. packet number -> state at the packet's start
local pdu_notes = {}       -- protocol .. packet number .. ":" .. offset -> what the first pass learned

-- A new capture (or a reload) starts from nothing: Wireshark calls `init` before dissecting one.
local function reset()
  conversations, snapshots, pdu_notes = {}, {}, {}
end
p_sw.init = reset
p_spark.init = reset

local function copy(t)
  local c = {}
  for k, v in pairs(t) do
    if type(v) == "table" and k ~= "asks" and k ~= "requests" then c[k] = copy(v) else c[k] = v end
  end
  return c
end

local function stream_key(pinfo)
  local s = f_tcp_stream()
  if s then return tostring(s.value) end
  local a = tostring(pinfo.src) .. ":" .. pinfo.src_port
  local b = tostring(pinfo.dst) .. ":" .. pinfo.dst_port
  if a > b then a, b = b, a end
  return a .. "-" .. b
end

-- The state at the start of this packet: the live state on the first pass (saved), the saved
-- copy afterwards. Returns the state to work on and whether this is the first pass.
local function state_for(proto, pinfo, fresh)
  local key = proto .. stream_key(pinfo)
  -- TCP may hand one packet to the dissector more than once (a reassembled PDU, then the rest).
  local calls = tonumber(pinfo.private[proto .. "_calls"] or "0") + 1
  pinfo.private[proto .. "_calls"] = tostring(calls)
  local snap = proto .. pinfo.number .. "#" .. calls
  if not pinfo.visited then
    local live = conversations[key]
    if live == nil then
      live = fresh()
      conversations[key] = live
    end
    snapshots[snap] = copy(live)
    return live, true, snap
  end
  local saved = snapshots[snap]
  if saved == nil then saved = fresh() end
  return copy(saved), false, snap
end

local function direction(pinfo)
  return tostring(pinfo.src) .. ":" .. pinfo.src_port
end

local function peer_of(pinfo)
  return tostring(pinfo.dst) .. ":" .. pinfo.dst_port
end

local function add_info(pinfo, text)
  local info = tostring(pinfo.cols.info)
  if info == "" or pinfo.private["sw_first"] == nil then
    pinfo.cols.info = text
    pinfo.private["sw_first"] = "1"
  else
    pinfo.cols.info = info .. "; " .. text
  end
end

------------------------------------------------------------------------------------------------
-- sparkwire: the handshake (handshake.md) and envelopes
------------------------------------------------------------------------------------------------

local function versions_text(node)
  if node == nil or node.t ~= "array" then return nil end
  local parts = {}
  for i, v in ipairs(node.items) do
    if v.t ~= "int" then return nil end
    parts[i] = v.text
  end
  return "[" .. table.concat(parts, ", ") .. "]"
end

local function dissect_handshake(tvb, off, stop, tree, pinfo, st, dir)
  local ok, root = pcall(read_value, tvb, off, stop, 0)
  if not ok then
    if type(root) ~= "table" then error(root, 0) end
    local detail = root.detail
    tree:add_proto_expert_info(E.bad_handshake, "not a sparkwire handshake frame (badMagic): " .. detail)
    add_info(pinfo, "Handshake frame that is not MessagePack")
    return
  end
  local keys, dup = {}, nil
  if root.t == "map" then
    for _, e in ipairs(root.entries) do
      if e.k.t == "str" then
        if keys[e.k.s] then dup = e.k.s end
        keys[e.k.s] = e
      end
    end
  end
  local magic = keys.magic
  if root.t ~= "map" or magic == nil or magic.v.t ~= "str" or magic.v.s ~= "sparkwire" then
    tree:add_proto_expert_info(E.bad_handshake, "no magic \"sparkwire\": not a sparkwire peer (badMagic)")
    add_info(pinfo, "Handshake frame without the sparkwire magic")
    return
  end
  local kind
  if keys.challenge then kind = "challenge"
  elseif keys.refused then kind = "answer (refused)"
  elseif keys.version then kind = "answer (accepted)"
  elseif keys.proof then kind = "proof"
  elseif keys.role or keys.versions then kind = "hello"
  else kind = "unknown" end
  local hs = tree:add(F.handshake, range(tvb, root), kind)
  local function str_of(name)
    local e = keys[name]
    if e and e.v.t == "str" then return e.v.s end
  end
  local known = {
    magic = F.hs_magic, role = F.hs_role, id = F.hs_id, auth = F.hs_auth, challenge = F.hs_challenge,
    refused = F.hs_refused, message = F.hs_message,
  }
  for _, e in ipairs(root.entries) do
    local name = e.k.t == "str" and e.k.s or nil
    local r = tvb(e.k.off, e.v.off + e.v.len - e.k.off)
    if name and known[name] and e.v.t == "str" then
      hs:add(known[name], r, safe(e.v.s))
    elseif name == "versions" and versions_text(e.v) then
      hs:add(F.hs_versions, r, versions_text(e.v))
    elseif name == "version" and e.v.t == "int" and e.v.num and e.v.num >= 0 and e.v.num < 4294967296 then
      hs:add(F.hs_version, r, e.v.num)
    elseif (name == "nonce" or name == "proof" or name == "admin") and e.v.t == "bin" then
      local f = name == "nonce" and F.hs_nonce or (name == "proof" and F.hs_proof or F.hs_admin)
      hs:add(f, tvb(e.v.soff, e.v.slen))
    else
      hs:add(F.hs_key, r, name and safe(name) or describe(e.k)):set_text("Key " .. (name and show_str(name) or describe(e.k)) .. ": " .. describe(e.v))
    end
  end
  if dup then
    hs:add_proto_expert_info(E.bad_handshake, "key " .. show_str(dup) .. " given twice (malformedHello)")
  end
  if kind == "hello" then
    local role = str_of("role")
    st.client = dir
    st.role = role
    st.family = role and ROLES[role] or nil
    st.auth = keys.auth ~= nil
    if role == nil or versions_text(keys.versions and keys.versions.v) == nil or str_of("id") == nil then
      hs:add_proto_expert_info(E.bad_handshake, "a hello needs versions, role and id (malformedHello)")
    end
    add_info(pinfo, string.format("Hello: %s %s, versions %s%s", role or "?", show_str(str_of("id") or ""),
      versions_text(keys.versions and keys.versions.v) or "?", st.auth and ", hmac-sha256" or ""))
  elseif kind == "challenge" then
    add_info(pinfo, "Challenge: " .. (str_of("challenge") or "?"))
  elseif kind == "proof" then
    add_info(pinfo, "Proof" .. (keys.admin and " (with admin proof)" or ""))
  elseif kind == "answer (accepted)" then
    local v = keys.version.v
    st.version = (v.t == "int" and v.num) or nil
    st.server_role = str_of("role")
    st.phase = "envelope"
    if st.family == nil and st.server_role then st.family = ROLES[st.server_role] end
    add_info(pinfo, string.format("Answer: version %s, %s %s", v.text or "?", st.server_role or "?",
      show_str(str_of("id") or "")))
  elseif kind == "answer (refused)" then
    st.phase = "refused"
    local reason, message = str_of("refused") or "?", str_of("message") or ""
    hs:add_proto_expert_info(E.refused, "refused: " .. reason .. " (" .. message .. ")")
    add_info(pinfo, "Refused: " .. reason .. " (" .. message .. ")")
  else
    hs:add_proto_expert_info(E.bad_handshake, "a handshake frame of no known kind")
    add_info(pinfo, "Handshake frame of no known kind")
  end
end

-- Whether a frame body reads as a handshake map: a map whose first bytes hold the key `magic`.
local function looks_like_handshake(tvb, off, stop)
  if stop - off < 7 then return false end
  local m = tvb(off, 1):uint()
  if not ((m >= 0x80 and m <= 0x8f) or m == 0xde or m == 0xdf) then return false end
  return tvb:raw(off, math.min(stop - off, 96)):find("\165magic", 1, true) ~= nil
end

local function sw_fresh()
  return {phase = "handshake", lost = {}, asks = {}}
end

local function dissect_sw_frame(tvb, off, total, tree, pinfo, st, dir, first, note_key)
  local sub = tree:add(p_sw, tvb(off, total))
  sub:add(F.length, tvb(off, 4))
  local body_off, stop = off + 4, off + total
  if st.phase == "handshake" then
    -- A connection whose handshake was not captured (Decode As): its first frame has no magic.
    if st.handshake_seen or looks_like_handshake(tvb, body_off, stop) then
      st.handshake_seen = true
      sub:append_text(", handshake")
      dissect_handshake(tvb, body_off, stop, sub, pinfo, st, dir)
      return
    end
    st.phase = "envelope"
  end
  if st.phase == "refused" then
    sub:add_proto_expert_info(E.after_refusal, "the server refused the handshake; nothing follows it")
  end
  local version = st.version
  if version == nil then
    version = p_sw.prefs.version
    sub:add_proto_expert_info(E.no_handshake)
  end
  sub:add(F.version, version):set_generated()
  if st.family then sub:add(F.family, st.family):set_generated() end
  local out = {}
  current_out = out
  local ok, err = pcall(decode_envelope, tvb, body_off, stop, st.family, version, sub, out)
  current_out = nil
  -- Asks and replies are paired by id, per direction (either end may ask).
  local note = pdu_notes[note_key]
  if first then
    note = {}
    if out.form == "ask" and out.id then
      st.asks[dir .. "|" .. out.id] = pinfo.number
    elseif (out.form == "reply" or out.form == "failure") and out.id then
      local k = peer_of(pinfo) .. "|" .. out.id
      note.response_to = st.asks[k]
      st.asks[k] = nil
    end
    pdu_notes[note_key] = note
  end
  if note and note.response_to then
    sub:add(F.response_to, note.response_to):set_generated()
  end
  local text = (out.form or "frame") .. (out.id and (" #" .. out.id) or "")
  if out.message then text = text .. " " .. out.message
  elseif out.reply then text = text .. " " .. out.reply end
  if not ok and type(err) ~= "table" then
    error(err, 0) -- a fault of the dissector itself: Wireshark shows it as a Lua error
  end
  if ok then
    sub:add(F.json, out.json):set_generated()
    if out.embedded then sub:add(F.task, out.embedded):set_generated() end
    sub:append_text(", " .. text)
    add_info(pinfo, text)
  else
    local kind, detail = err.kind, err.detail
    sub:add(F.error, kind):set_generated()
    sub:add(F.error_detail, detail):set_generated()
    sub:add_proto_expert_info(E[kind], kind .. ": " .. detail)
    sub:append_text(", " .. kind)
    add_info(pinfo, "[" .. kind .. "] " .. text)
  end
end

function p_sw.dissector(tvb, pinfo, tree)
  local len = tvb:len()
  if len == 0 then return 0 end
  pinfo.cols.protocol = "sparkwire"
  local st, first, call = state_for("sw", pinfo, sw_fresh)
  local dir = direction(pinfo)
  local off = 0
  while off < len do
    if st.lost[dir] then
      local sub = tree:add(p_sw, tvb(off))
      sub:append_text(", framing lost: bytes not dissected")
      sub:add(F.lost, tvb(off), len - off)
      return len
    end
    if len - off < 4 then
      pinfo.desegment_offset = off
      pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
      return len
    end
    local body = tvb(off, 4):uint()
    local limit = st.phase == "handshake" and HANDSHAKE_LIMIT or FRAME_LIMIT
    if body > limit then
      local sub = tree:add(p_sw, tvb(off, 4))
      sub:add(F.length, tvb(off, 4))
      sub:add(F.too_large, tvb(off, 4))
      sub:add_proto_expert_info(E.too_large, string.format("frame of %d bytes declared; the limit is %d", body, limit))
      add_info(pinfo, string.format("Frame over the limit (%d bytes declared)", body))
      -- Nothing after the prefix is framed any more: the loop shows the rest as lost.
      st.lost[dir] = true
      off = off + 4
    else
      if len - off < 4 + body then
        pinfo.desegment_offset = off
        pinfo.desegment_len = 4 + body - (len - off)
        return len
      end
      dissect_sw_frame(tvb, off, 4 + body, tree, pinfo, st, dir, first, call .. ":" .. off)
      off = off + 4 + body
    end
  end
  return len
end

------------------------------------------------------------------------------------------------
-- Spark's transport frames and RequestMessage
------------------------------------------------------------------------------------------------

-- Reads Spark's bytes with bounds: every read raises past `stop`.
local function reader(tvb, pos, stop)
  local r = {pos = pos}
  local function need(n)
    if r.pos + n > stop then error({short = true}, 0) end
  end
  function r.u8() need(1); local v = tvb(r.pos, 1):uint(); r.pos = r.pos + 1; return v end
  function r.u16() need(2); local v = tvb(r.pos, 2):uint(); r.pos = r.pos + 2; return v end
  function r.i32() need(4); local v = tvb(r.pos, 4):int(); r.pos = r.pos + 4; return v end
  function r.i64() need(8); local v = tvb(r.pos, 8):int64(); r.pos = r.pos + 8; return v end
  function r.raw(n) need(n); local v = n > 0 and tvb:raw(r.pos, n) or ""; r.pos = r.pos + n; return v end
  function r.utf() return r.raw(r.u16()) end
  return r
end

local JAVA_MAGIC = "\172\237\000\005"

-- The class of a Java serialization stream's first object, from its first class descriptor;
-- for Scala 2.13 objects written as ModuleSerializationProxy, the module class it names.
local function java_class(tvb, pos, stop)
  local ok, name, desc = pcall(function()
    local r = reader(tvb, pos, stop)
    if r.raw(4) ~= JAVA_MAGIC then return nil end
    if r.u8() ~= 0x73 then return nil end      -- TC_OBJECT
    if r.u8() ~= 0x72 then return nil end      -- TC_CLASSDESC
    local first = r.utf()
    if first ~= "scala.runtime.ModuleSerializationProxy" then return first, first end
    r.raw(9)                                   -- serialVersionUID, flags
    for _ = 1, r.u16() do
      local code = r.u8()
      r.utf()
      if code == 0x4c or code == 0x5b then     -- 'L', '[': the field's class name
        local t = r.u8()
        if t == 0x74 then r.utf() elseif t == 0x71 then r.raw(4) else return first, first end
      end
    end
    if r.u8() ~= 0x78 or r.u8() ~= 0x70 then return first, first end  -- end of annotations, no super
    if r.u8() ~= 0x76 or r.u8() ~= 0x72 then return first, first end  -- TC_CLASS, TC_CLASSDESC
    return r.utf(), first
  end)
  if ok and name then return safe(name), desc and safe(desc) end
  return nil
end

local function address(r)
  local has = r.u8()
  if has == 0 then return false end
  if has ~= 1 then error({short = true}, 0) end
  local host = r.utf()
  local port = r.i32()
  return safe(host) .. ":" .. port
end

-- A RequestMessage: sender, receiver, endpoint name, then a Java stream; nil when not one.
local function request_message(tvb, pos, stop)
  local ok, rm = pcall(function()
    local r = reader(tvb, pos, stop)
    local m = {}
    m.sender = address(r)
    m.receiver = address(r)
    m.endpoint_off = r.pos
    m.endpoint = safe(r.utf())
    m.stream = r.pos
    if stop - r.pos < 4 or tvb:raw(r.pos, 4) ~= JAVA_MAGIC then return nil end
    return m
  end)
  if ok then return rm end
  return nil
end

local function block_class(tvb, pos, stop)
  if pos >= stop then return nil end
  local name = BLOCK_TRANSFER[tvb(pos, 1):uint()]
  if name == nil then return nil end
  return "org.apache.spark.network.shuffle.protocol." .. name
end

local function spark_body(sub, tvb, pos, stop, with_header)
  local info = {}
  if with_header then
    local rm = request_message(tvb, pos, stop)
    if rm then
      if rm.sender then sub:add(SF.sender, rm.sender) else sub:add(SF.sender, "(none: a client-mode RpcEnv)") end
      if rm.receiver then sub:add(SF.receiver, rm.receiver) else sub:add(SF.receiver, "(none)") end
      sub:add(SF.endpoint, tvb(rm.endpoint_off, rm.stream - rm.endpoint_off), rm.endpoint)
      info.endpoint = rm.endpoint
      pos = rm.stream
    end
  end
  local class, desc
  if stop - pos >= 4 and tvb:raw(pos, 4) == JAVA_MAGIC then
    class, desc = java_class(tvb, pos, stop)
  else
    class = block_class(tvb, pos, stop)
  end
  if class then
    sub:add(SF.class, tvb(pos, stop - pos), class)
    if desc and desc ~= class then sub:add(SF.descriptor, desc) end
    info.class = class
  end
  if stop > pos then sub:add(SF.body, tvb(pos, stop - pos)) end
  return info
end

local function short(class)
  if class == nil then return nil end
  return class:match("([^.]+)$")
end

local function spark_fresh()
  return {skip = {}, lost = {}, requests = {}}
end

local function dissect_spark_frame(tvb, off, total, tree, pinfo, st, dir, first, note_key)
  local sub = tree:add(p_spark, tvb(off, total))
  sub:add(SF.length, tvb(off, 8))
  local ty = tvb(off + 8, 1):uint()
  sub:add(SF.type, tvb(off + 8, 1))
  local name = SPARK_TYPES[ty] or ("type " .. ty)
  sub:append_text(", " .. name)
  local stop = off + total
  local text = name
  local ok, err = pcall(function()
    local r = reader(tvb, off + 9, stop)
    if ty == 3 or ty == 4 or ty == 5 then
      local id = r.i64()
      sub:add(SF.request_id, tvb(off + 9, 8))
      text = text .. " #" .. tostring(id)
      local info = {}
      if ty == 5 then
        local n = r.i32()
        local raw = r.raw(n)
        local first_line = safe(raw:match("^[^\n]*"))
        sub:add(SF.error, tvb(off + 21, n), safe(raw))
        sub:add_proto_expert_info(SE.failure, first_line)
        text = text .. " " .. (first_line:match("^[^:]*") or "")
      else
        local declared = r.i32()
        sub:add(SF.body_length, tvb(off + 17, 4))
        if declared ~= stop - r.pos then
          sub:add_proto_expert_info(SE.malformed, string.format("header says a body of %d bytes, the frame holds %d", declared, stop - r.pos))
        end
        info = spark_body(sub, tvb, r.pos, stop, ty == 3)
      end
      local key = tostring(id)
      local note = pdu_notes[note_key]
      if first then
        note = {}
        if ty == 3 then
          st.requests[dir .. "|" .. key] = {frame = pinfo.number, endpoint = info.endpoint, class = info.class}
        else
          local k = peer_of(pinfo) .. "|" .. key
          note.request = st.requests[k]
          st.requests[k] = nil
        end
        pdu_notes[note_key] = note
      end
      if ty ~= 3 then
        if note and note.request then
          sub:add(SF.response_to, note.request.frame):set_generated()
          if note.request.endpoint then sub:add(SF.request_endpoint, note.request.endpoint):set_generated() end
          if note.request.class then sub:add(SF.request_class, note.request.class):set_generated() end
          text = text .. " (to " .. (short(note.request.class) or "?") .. ")"
        else
          sub:add_proto_expert_info(SE.unpaired)
        end
      end
      if info.endpoint then text = text .. " " .. info.endpoint end
      if info.class then text = text .. " " .. short(info.class) end
    elseif ty == 9 then
      local declared = r.i32()
      sub:add(SF.body_length, tvb(off + 9, 4))
      if declared ~= stop - r.pos then
        sub:add_proto_expert_info(SE.malformed, string.format("header says a body of %d bytes, the frame holds %d", declared, stop - r.pos))
      end
      local info = spark_body(sub, tvb, r.pos, stop, true)
      if info.endpoint then text = text .. " " .. info.endpoint end
      if info.class then text = text .. " " .. short(info.class) end
    elseif ty <= 2 then
      local stream = r.i64()
      local chunk = r.i32()
      sub:add(SF.stream, tvb(off + 9, 8), tostring(stream))
      sub:add(SF.chunk, tvb(off + 17, 4))
      text = text .. string.format(" stream %s chunk %d", tostring(stream), chunk)
      if ty == 2 then
        local n = r.i32()
        sub:add(SF.error, tvb(r.pos, n), safe(r.raw(n)))
      elseif stop > r.pos then
        sub:add(SF.body, tvb(r.pos, stop - r.pos))
      end
    elseif ty == 6 or ty == 7 or ty == 8 then
      local n = r.i32()
      local stream = safe(r.raw(n))
      sub:add(SF.stream, tvb(off + 13, n), stream)
      text = text .. " " .. stream
      if ty == 8 then
        local m = r.i32()
        sub:add(SF.error, tvb(r.pos, m), safe(r.raw(m)))
      elseif ty == 7 then
        local count = r.i64()
        sub:add(SF.stream_data, tvb(r.pos - 8, 8))
        if first and count > Int64(0) then st.skip[dir] = count:tonumber() end
      end
    elseif ty == 10 then
      r.i64()
      sub:add(SF.request_id, tvb(off + 9, 8))
      local n = r.i32()
      r.raw(n)
      local count = r.i64()
      sub:add(SF.stream_data, tvb(r.pos - 8, 8))
      if first and count > Int64(0) then st.skip[dir] = count:tonumber() end
    elseif ty == 11 or ty == 12 then
      sub:add(SF.request_id, tvb(off + 9, 8))
      r.i64()
    else
      sub:add_proto_expert_info(SE.malformed, "unknown frame type " .. ty)
    end
  end)
  if not ok then
    sub:add_proto_expert_info(SE.malformed, name .. " frame too short for its header")
    text = text .. " [malformed]"
  end
  add_info(pinfo, text)
end

function p_spark.dissector(tvb, pinfo, tree)
  local len = tvb:len()
  if len == 0 then return 0 end
  pinfo.cols.protocol = "Spark RPC"
  local st, first, call = state_for("spark", pinfo, spark_fresh)
  local dir = direction(pinfo)
  local off = 0
  while off < len do
    local skip = st.skip[dir]
    if skip and skip > 0 then
      local take = math.min(skip, len - off)
      tree:add(p_spark, tvb(off, take)):append_text(string.format(", stream data (%d bytes)", take))
      st.skip[dir] = skip - take
      off = off + take
    elseif st.lost[dir] then
      tree:add(p_spark, tvb(off)):append_text(", framing lost: bytes not dissected")
      return len
    elseif len - off < 9 then
      pinfo.desegment_offset = off
      pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
      return len
    else
      local hi, lo = tvb(off, 4):uint(), tvb(off + 4, 4):uint()
      local total = hi * 4294967296 + lo
      if total < 9 or hi > 0 then
        local sub = tree:add(p_spark, tvb(off))
        sub:add(SF.length, tvb(off, 8))
        sub:add_proto_expert_info(SE.lost, string.format("frame length %.0f makes no sense: the framing is lost", total))
        add_info(pinfo, "Framing lost")
        st.lost[dir] = true
        return len
      end
      if len - off < total then
        pinfo.desegment_offset = off
        pinfo.desegment_len = total - (len - off)
        return len
      end
      dissect_spark_frame(tvb, off, total, tree, pinfo, st, dir, first, call .. ":" .. off)
      off = off + total
    end
  end
  return len
end

------------------------------------------------------------------------------------------------
-- Heuristics: the first bytes of a connection say which protocol it carries
------------------------------------------------------------------------------------------------

local function heur_sparkwire(tvb, pinfo, tree)
  local n = tvb:len()
  if n < 16 then return false end
  local body = tvb(0, 4):uint()
  -- A hello over the handshake limit is still recognised (and shown as over the limit).
  if body < 12 or body > FRAME_LIMIT then return false end
  local m = tvb(4, 1):uint()
  if not ((m >= 0x80 and m <= 0x8f) or m == 0xde or m == 0xdf) then return false end
  local head = tvb:raw(4, math.min(n - 4, body, 96))
  if not head:find("\165magic", 1, true) or not head:find("\169sparkwire", 1, true) then return false end
  pinfo.conversation = p_sw
  p_sw.dissector(tvb, pinfo, tree)
  return true
end

-- Spark's first frame on a connection is an RpcRequest or a OneWayMessage (a ChunkFetchRequest on
-- a block-transfer connection): an 8-byte length below 2 GiB, a type byte, and body lengths that
-- agree with it when the segment holds them. A first segment holding less than the header is not
-- taken (its connection is left to other dissectors).
local function heur_spark(tvb, pinfo, tree)
  local n = tvb:len()
  if n < 9 then return false end
  if tvb(0, 4):uint() ~= 0 then return false end
  local total = tvb(4, 4):uint()
  local ty = tvb(8, 1):uint()
  if total < 13 or total > 0x7fffffff then return false end
  if ty == 9 then
    if n >= 13 and tvb(9, 4):int() ~= total - 13 then return false end
  elseif ty == 3 or ty == 4 then
    if total < 21 or (n >= 21 and tvb(17, 4):int() ~= total - 21) then return false end
  elseif ty == 0 then
    if total ~= 21 then return false end
  else
    return false
  end
  pinfo.conversation = p_spark
  p_spark.dissector(tvb, pinfo, tree)
  return true
end

p_sw:register_heuristic("tcp", heur_sparkwire)
p_spark:register_heuristic("tcp", heur_spark)
DissectorTable.get("tcp.port"):add_for_decode_as(p_sw)
DissectorTable.get("tcp.port"):add_for_decode_as(p_spark)
