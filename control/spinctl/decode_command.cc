// spinctl decode: a RoCEv2 decoder for pcap and pcapng captures
// (docs/roce-decode.md).
// Every frame goes through the dataplane's own parsers -- the classifier
// for offsets, roce::ParseFrame for the checks and headers, the CM's and
// MRSP's parsers for QP1 MADs and SEND payloads -- so that what it prints
// is what spinnic would have done with the frame. It never talks to
// spinnicd.
#include <arpa/inet.h>
#include <rte_log.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "control/spinctl/command.h"
#include "control/spinctl/pcap_reader.h"
#include "dataplane/classifier.h"
#include "dataplane/roce/cm.h"
#include "dataplane/roce/cnp.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/mrsp.h"
#include "dataplane/roce/responder.h"
#include "dataplane/roce/wire.h"

namespace spinnic::spinctl {
namespace {

// One output record: fields in print order, each with its text and JSON
// renderings, so that both output modes carry exactly the same facts.
class Record {
 public:
  void Number(absl::string_view key, uint64_t value) {
    Add(key, absl::StrCat(value), absl::StrCat(value));
  }
  // Hex in both modes; a JSON string because 64-bit addresses do not
  // survive a double.
  void Hex(absl::string_view key, uint64_t value, int digits) {
    std::string text = absl::StrFormat("0x%0*x", digits, value);
    Add(key, text, absl::StrCat("\"", text, "\""));
  }
  void Flag(absl::string_view key, bool value) {
    Add(key, value ? "1" : "0", value ? "true" : "false");
  }
  void String(absl::string_view key, absl::string_view value) {
    // Text mode quotes values with spaces so that key=value stays
    // splittable.
    std::string text = absl::StrContains(value, ' ')
                           ? absl::StrCat("\"", value, "\"")
                           : std::string(value);
    Add(key, text, JsonString(value));
  }
  // A leading column: bare in the text line (omitted when `text` is
  // empty), a key in JSON (omitted when `json` is empty).
  void Column(absl::string_view key, std::string text, std::string json) {
    fields_.push_back({std::string(key), std::move(text), std::move(json),
                       /*column=*/true});
  }

  std::string Text() const {
    std::string out;
    for (const Field& f : fields_) {
      if (f.text.empty()) continue;
      if (!out.empty()) out.push_back(' ');
      if (f.column) {
        absl::StrAppend(&out, f.text);
      } else {
        absl::StrAppend(&out, f.key, "=", f.text);
      }
    }
    return out;
  }
  std::string Json() const {
    std::string out = "{";
    for (const Field& f : fields_) {
      if (f.json.empty()) continue;
      if (out.size() > 1) out.push_back(',');
      absl::StrAppend(&out, "\"", f.key, "\":", f.json);
    }
    out.push_back('}');
    return out;
  }

  static std::string JsonString(absl::string_view value) {
    std::string out = "\"";
    for (char c : value) {
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(c);
      } else if (static_cast<unsigned char>(c) < 0x20) {
        absl::StrAppendFormat(&out, "\\u%04x", c);
      } else {
        out.push_back(c);
      }
    }
    out.push_back('"');
    return out;
  }

 private:
  struct Field {
    std::string key;
    std::string text;
    std::string json;
    bool column = false;
  };
  void Add(absl::string_view key, std::string text, std::string json) {
    fields_.push_back(
        {std::string(key), std::move(text), std::move(json), false});
  }
  std::vector<Field> fields_;
};

std::string AddressText(const std::array<uint8_t, 16>& address, bool ipv4) {
  char buffer[INET6_ADDRSTRLEN] = {};
  if (ipv4) {
    inet_ntop(AF_INET, address.data() + 12, buffer, sizeof(buffer));
  } else {
    inet_ntop(AF_INET6, address.data(), buffer, sizeof(buffer));
  }
  return buffer;
}

// Seconds since the first frame, at the capture's resolution.
std::string RelativeTime(uint64_t now_ns, uint64_t first_ns, bool nanosecond) {
  const bool negative = now_ns < first_ns;  // out-of-order capture
  const uint64_t delta = negative ? first_ns - now_ns : now_ns - first_ns;
  const uint64_t seconds = delta / 1'000'000'000;
  const uint64_t fraction = delta % 1'000'000'000;
  return nanosecond ? absl::StrFormat("%s%d.%09d", negative ? "-" : "", seconds,
                                      fraction)
                    : absl::StrFormat("%s%d.%06d", negative ? "-" : "", seconds,
                                      fraction / 1000);
}

const char* PortSpaceName(uint16_t port_space) {
  switch (port_space) {
    case roce::kRdmaPsTcp:
      return "tcp";
    case roce::kRdmaPsUdp:
      return "udp";
    case roce::kRdmaPsIb:
      return "ib";
    case roce::kRdmaPsIpoib:
      return "ipoib";
  }
  return "unknown";
}

// "Message MRAed" / "Message Rejected".
const char* CmMessageName(uint8_t message, bool mra) {
  switch (message) {
    case roce::kCmMsgReq:
      return "REQ";
    case roce::kCmMsgRep:
      return "REP";
    case roce::kCmMsgOther:
      return mra ? "LAP" : "other";
  }
  return "reserved";
}

void AddCommIds(uint32_t local, uint32_t remote, Record* r) {
  r->Hex("local_comm_id", local, 8);
  r->Hex("remote_comm_id", remote, 8);
}

void AddCmFields(std::span<const uint8_t> mad, Record* r) {
  roce::CmMad parsed;
  const roce::CmParseError error = roce::ParseCmMad(mad, &parsed);
  if (error != roce::CmParseError::kNone) {
    r->String("cm_error", roce::CmParseErrorName(error));
    return;
  }
  r->String("cm", roce::CmAttrName(roce::AttrOf(parsed.message)));
  r->Hex("tid", parsed.header.transaction_id, 16);
  if (const auto* req = std::get_if<roce::CmReq>(&parsed.message)) {
    r->Hex("local_comm_id", req->local_comm_id, 8);
    r->Hex("qpn", req->local_qpn, 6);
    r->Number("start_psn", req->starting_psn);
    r->Hex("service_id", req->service_id, 16);
    uint16_t port_space = 0;
    uint16_t port = 0;
    if (roce::ParseRdmaCmServiceId(req->service_id, &port_space, &port)) {
      r->String("rdma_cm_ps", PortSpaceName(port_space));
      r->Number("rdma_cm_port", port);
    }
    r->Number("mtu", roce::PathMtuBytes(req->path_mtu));
  } else if (const auto* rep = std::get_if<roce::CmRep>(&parsed.message)) {
    AddCommIds(rep->local_comm_id, rep->remote_comm_id, r);
    r->Hex("qpn", rep->local_qpn, 6);
    r->Number("start_psn", rep->starting_psn);
  } else if (const auto* rtu = std::get_if<roce::CmRtu>(&parsed.message)) {
    AddCommIds(rtu->local_comm_id, rtu->remote_comm_id, r);
  } else if (const auto* rej = std::get_if<roce::CmRej>(&parsed.message)) {
    AddCommIds(rej->local_comm_id, rej->remote_comm_id, r);
    r->String("rejected", CmMessageName(rej->message_rejected, false));
    r->Number("reason", rej->reason);
    r->String("reason_name", roce::CmRejReasonName(rej->reason));
  } else if (const auto* dreq = std::get_if<roce::CmDreq>(&parsed.message)) {
    AddCommIds(dreq->local_comm_id, dreq->remote_comm_id, r);
    r->Hex("remote_qpn", dreq->remote_qpn, 6);
  } else if (const auto* drep = std::get_if<roce::CmDrep>(&parsed.message)) {
    AddCommIds(drep->local_comm_id, drep->remote_comm_id, r);
  } else if (const auto* mra = std::get_if<roce::CmMra>(&parsed.message)) {
    AddCommIds(mra->local_comm_id, mra->remote_comm_id, r);
    r->String("mraed", CmMessageName(mra->message_mraed, true));
    r->Number("service_timeout_us",
              roce::CmTimeoutMicros(mra->service_timeout));
  } else if (const auto* sidr_req =
                 std::get_if<roce::CmSidrReq>(&parsed.message)) {
    r->Hex("request_id", sidr_req->request_id, 8);
    r->Hex("service_id", sidr_req->service_id, 16);
  } else if (const auto* sidr_rep =
                 std::get_if<roce::CmSidrRep>(&parsed.message)) {
    r->Hex("request_id", sidr_rep->request_id, 8);
    r->Number("sidr_status", sidr_rep->status);
    r->Hex("qpn", sidr_rep->qpn, 6);
  }
}

// A summary when the payload is a well-formed NAAICE MRSP message; nothing
// otherwise (most SEND payloads are not MRSP).
void AddMrspFields(std::span<const uint8_t> payload, Record* r) {
  namespace mrsp = roce::mrsp;
  mrsp::MessageType type{};
  if (mrsp::PeekType(payload, &type) != mrsp::ParseError::kNone) return;
  switch (type) {
    case mrsp::MessageType::kError: {
      uint8_t code = 0;
      if (mrsp::ParseErrorMessage(payload, &code) != mrsp::ParseError::kNone) {
        return;
      }
      r->String("mrsp", "error");
      r->Number("mrsp_code", code);
      return;
    }
    case mrsp::MessageType::kAdvertiseRequest: {
      mrsp::AdvertiseRequest request;
      if (mrsp::ParseAdvertiseRequest(payload, &request) !=
          mrsp::ParseError::kNone) {
        return;
      }
      uint64_t bytes = 0;
      for (size_t i = 0; i < request.count; ++i) {
        bytes += request.regions[i].size;
      }
      r->String("mrsp", "advertise_request");
      r->Number("mrsp_regions", request.count);
      r->Number("mrsp_bytes", bytes);
      return;
    }
    case mrsp::MessageType::kAdvertise: {
      mrsp::Advertise advertise;
      if (mrsp::ParseAdvertise(payload, &advertise) !=
          mrsp::ParseError::kNone) {
        return;
      }
      uint64_t bytes = 0;
      for (size_t i = 0; i < advertise.count; ++i) {
        bytes += advertise.regions[i].size;
      }
      r->String("mrsp", "advertise");
      r->Number("mrsp_regions", advertise.count);
      r->Number("mrsp_bytes", bytes);
      return;
    }
  }
}

void AddAethFields(const roce::Aeth& aeth, Record* r) {
  const uint8_t value = aeth.syndrome & roce::kAethValueMask;
  switch (aeth.syndrome & roce::kAethTypeMask) {
    case roce::kAethAck:
      r->String("aeth", "ACK");
      r->Number("credits", value);
      break;
    case roce::kAethRnrNak:
      r->String("aeth", "RNR");
      r->Number("rnr_timer", value);
      r->Number("rnr_us", roce::kRnrTimerMicros[value]);
      break;
    case roce::kAethNak:
      r->String("aeth", "NAK");
      r->String("nak",
                roce::ResponderNakName(static_cast<roce::NakCode>(value)));
      break;
    default:
      r->String("aeth", "reserved");
      r->Hex("syndrome", aeth.syndrome, 2);
      break;
  }
  r->Number("msn", aeth.msn);
}

void AddExtensionFields(const roce::Packet& p, std::span<const uint8_t> frame,
                        Record* r) {
  const roce::OpcodeInfo& info = *p.info;
  const roce::ExtHeaders& ext = p.ext;
  if (info.has(roce::kHasDeth)) {
    r->Hex("qkey", ext.deth.qkey, 8);
    r->Hex("src_qp", ext.deth.src_qp, 6);
  }
  if (info.has(roce::kHasReth)) {
    r->Hex("va", ext.reth.va, 16);
    r->Hex("rkey", ext.reth.rkey, 8);
    r->Number("dma_len", ext.reth.dma_length);
  }
  if (info.has(roce::kHasAtomicEth)) {
    r->Hex("va", ext.atomic_eth.va, 16);
    r->Hex("rkey", ext.atomic_eth.rkey, 8);
    if (p.bth.opcode == static_cast<uint8_t>(roce::Opcode::kRcFetchAdd)) {
      r->Hex("add", ext.atomic_eth.swap_add, 16);
    } else {
      r->Hex("swap", ext.atomic_eth.swap_add, 16);
      r->Hex("compare", ext.atomic_eth.compare, 16);
    }
  }
  if (info.has(roce::kHasAeth)) AddAethFields(ext.aeth, r);
  if (info.has(roce::kHasAtomicAckEth)) {
    r->Hex("orig", ext.atomic_ack_eth.original, 16);
  }
  if (info.has(roce::kHasImmDt)) r->Hex("imm", ext.imm_data, 8);
  if (info.has(roce::kHasIeth)) r->Hex("inv_rkey", ext.ieth, 8);
  if (info.has(roce::kHasPayload)) r->Number("len", p.payload_length);

  const std::span<const uint8_t> payload =
      frame.subspan(p.payload_offset, p.payload_length);
  if (info.kind == roce::OpKind::kUdSend && p.bth.dest_qp == roce::kGsiQp) {
    AddCmFields(payload, r);
  } else if (info.kind == roce::OpKind::kSend &&
             info.position == roce::OpPosition::kOnly) {
    AddMrspFields(payload, r);
  }
}

struct Totals {
  uint64_t frames = 0;
  uint64_t roce = 0;
  uint64_t ok = 0;
  uint64_t icrc_bad = 0;
  uint64_t parse_errors = 0;  // refused before the ICRC was checked
  uint64_t others = 0;
  uint64_t cut = 0;  // cut by the snaplen: not decoded
  uint64_t first_cut = 0;
};

// A frame the capture holds only partly: nothing can be checked.
Record CutRecord(const PcapRecord& record, const std::string& time) {
  Record r;
  r.Column("type", "", "\"cut\"");
  r.Column("frame", absl::StrFormat("%6d", record.index),
           absl::StrCat(record.index));
  r.Column("time", time, time);
  r.Column("ts_ns", "", absl::StrCat(record.timestamp_ns));
  r.Column("note", "(cut by the snaplen, not decoded)", "\"snaplen\"");
  r.Number("captured", record.data.size());
  r.Number("length", record.original_length);
  return r;
}

// The parse's verdict (icrc=ok/bad/unchecked, error=), counted.
void AddVerdict(roce::ParseError error, Totals* totals, Record* r) {
  ++totals->roce;
  if (error == roce::ParseError::kNone) {
    ++totals->ok;
    r->String("icrc", "ok");
  } else if (error == roce::ParseError::kBadIcrc) {
    ++totals->icrc_bad;
    r->String("icrc", "bad");
  } else {
    ++totals->parse_errors;
    r->String("icrc", "unchecked");
    r->String("error", roce::ParseErrorName(error));
  }
}

void AddAddressColumns(const ParsedFrame& classified, Record* r) {
  const bool v4 = classified.layers.is_ipv4;
  const std::string src = AddressText(classified.src_addr, v4);
  const std::string dst = AddressText(classified.dst_addr, v4);
  r->Column("src", src, Record::JsonString(src));
  r->Column("arrow", "->", "");
  r->Column("dst", dst, Record::JsonString(dst));
}

void AddFrameColumns(const PcapRecord& record, const std::string& time,
                     Record* r) {
  r->Column("type", "", "\"roce\"");
  r->Column("frame", absl::StrFormat("%6d", record.index),
            absl::StrCat(record.index));
  r->Column("time", time, time);
  r->Column("ts_ns", "", absl::StrCat(record.timestamp_ns));
}

// A congestion notification (BTH opcode 0x81, dataplane/roce/cnp.h): not in
// the RC opcode table, so roce::ParseFrame would call it a reserved opcode;
// roce::ParseCnp checks it whole, ICRC included.
void DecodeCnp(const PcapRecord& record, const std::string& time,
               const ParsedFrame& classified, std::span<uint8_t> scratch,
               Totals* totals, Record* r) {
  const PacketLayers& layers = classified.layers;
  roce::Cnp cnp;
  const roce::ParseError error =
      roce::ParseCnp(scratch.data(), static_cast<uint32_t>(record.data.size()),
                     layers.l3_offset, layers.l4_offset, &cnp);
  AddFrameColumns(record, time, r);
  AddAddressColumns(classified, r);
  r->Column("opcode_name", "CNP", Record::JsonString("CNP"));
  r->Column("opcode", "", absl::StrCat(roce::kCnpOpcode));
  const uint32_t bth_offset = layers.l4_offset + roce::kUdpBytes;
  if (uint64_t{bth_offset} + roce::kBthBytes <= record.data.size()) {
    roce::Bth bth;
    roce::LoadBth(record.data.data() + bth_offset, &bth);
    r->Hex("qp", bth.dest_qp, 6);
  }
  AddVerdict(error, totals, r);
  if (error == roce::ParseError::kNone) r->Flag("becn", cnp.becn);
}

// The frame's line, or false (and nothing) for a frame that is not RoCEv2.
bool DecodeFrame(const PcapRecord& record, const std::string& time,
                 std::span<uint8_t> scratch, Totals* totals, Record* r) {
  ParsedFrame classified;
  const uint32_t length = static_cast<uint32_t>(record.data.size());
  spinnic::ParseFrame(record.data.data(), length, &classified);
  const PacketLayers& layers = classified.layers;
  const bool ip = layers.is_ipv4 || layers.is_ipv6;
  if (!ip || layers.l4_offset == PacketLayers::kAbsent ||
      layers.ip_proto != roce::kIpProtoUdp || !classified.has_l4_ports ||
      classified.dst_port != roce::kRoceUdpPort) {
    return false;
  }
  // roce::ParseFrame masks the ICRC's variant fields in place; the file's
  // bytes are read-only.
  std::copy(record.data.begin(), record.data.end(), scratch.begin());
  if (roce::LooksLikeCnp(scratch.data(), length, layers.l4_offset)) {
    DecodeCnp(record, time, classified, scratch, totals, r);
    return true;
  }
  roce::Packet packet;
  const roce::ParseError error = roce::ParseFrame(
      scratch.data(), length, layers.l3_offset, layers.l4_offset, &packet);

  AddFrameColumns(record, time, r);
  AddAddressColumns(classified, r);

  // On a refused frame the BTH is still shown when the frame holds one: a
  // bad ICRC or checksum is easier to place with its QP and PSN.
  roce::Bth bth;
  const uint32_t bth_offset = layers.l4_offset + roce::kUdpBytes;
  const bool have_bth = error == roce::ParseError::kNone ||
                        uint64_t{bth_offset} + roce::kBthBytes <= length;
  if (error == roce::ParseError::kNone) {
    bth = packet.bth;
  } else if (have_bth) {
    roce::LoadBth(record.data.data() + bth_offset, &bth);
  }
  if (have_bth) {
    const roce::OpcodeInfo& info = roce::GetOpcodeInfo(bth.opcode);
    const std::string name =
        info.valid() ? info.name
                     : absl::StrFormat("reserved opcode 0x%02x", bth.opcode);
    r->Column("opcode_name", name, Record::JsonString(name));
    r->Column("opcode", "", absl::StrCat(bth.opcode));
    r->Hex("qp", bth.dest_qp, 6);
    r->Number("psn", bth.psn);
  }
  AddVerdict(error, totals, r);
  if (have_bth) r->Flag("ackreq", bth.ack_req);
  if (error == roce::ParseError::kNone) {
    AddExtensionFields(packet, record.data, r);
  }
  return true;
}

Record SummaryRecord(const Totals& t) {
  Record r;
  r.Column("type", "summary:", "\"summary\"");
  r.Number("frames", t.frames);
  r.Number("roce", t.roce);
  r.Number("icrc_ok", t.ok);
  r.Number("icrc_bad", t.icrc_bad);
  r.Number("parse_errors", t.parse_errors);
  r.Number("others", t.others);
  r.Number("cut", t.cut);
  return r;
}

void Print(const Env& env, const Record& r) {
  const std::string line = env.json() ? r.Json() : r.Text();
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
}

int RunDecode(Env& env, const ParsedArgs& args) {
  const std::string& path = args.positional[0];
  absl::StatusOr<std::string> file = ReadFile(path);
  if (!file.ok()) return env.UsageError(file.status());
  const std::span<const uint8_t> bytes(
      reinterpret_cast<const uint8_t*>(file->data()), file->size());
  absl::StatusOr<PcapReader> reader = PcapReader::Open(bytes);
  if (!reader.ok()) {
    return env.UsageError(absl::StrCat(path, ": ", reader.status().message()));
  }

  // Without the EAL, librte_net says on stderr that it falls back to its
  // table CRC; correct, and nothing a reader of the decode should see.
  rte_log_set_global_level(RTE_LOG_CRIT);

  // One frame-sized scratch buffer for the whole capture.
  std::vector<uint8_t> scratch(kPcapMaxRecordBytes);
  Totals totals;
  uint64_t first_ns = 0;
  PcapRecord record;
  while (reader->Next(&record)) {
    if (totals.frames == 0) first_ns = record.timestamp_ns;
    ++totals.frames;
    const std::string time =
        RelativeTime(record.timestamp_ns, first_ns, record.nanosecond);
    if (record.cut_by_snaplen()) {
      if (totals.cut++ == 0) totals.first_cut = record.index;
      Print(env, CutRecord(record, time));
      continue;
    }
    Record r;
    if (DecodeFrame(record, time, scratch, &totals, &r)) {
      Print(env, r);
    } else {
      ++totals.others;
    }
  }
  Print(env, SummaryRecord(totals));
  std::fflush(stdout);
  if (!reader->status().ok()) {
    return env.UsageError(absl::StrCat(path, ": ", reader->status().message()));
  }
  if (totals.cut != 0) {
    return env.UsageError(absl::StrCat(
        path, ": ", totals.cut,
        " frame(s) cut short by the capture's snaplen (",
        reader->header().snaplen, " bytes; first: frame ", totals.first_cut,
        "): not decoded; capture again with -s 0"));
  }
  return kExitOk;
}

}  // namespace

std::vector<Command> DecodeCommands() {
  return {
      {"decode",
       "FILE.pcap|FILE.pcapng",
       1,
       1,
       "decode the RoCEv2 frames of a pcap or pcapng capture (no spinnicd "
       "needed)",
       {},
       "One line per RoCEv2 frame (UDP port 4791), decoded with spinnic's own\n"
       "parsers: frame number, seconds since the first frame, source ->\n"
       "destination, opcode, then key=value fields: qp (destination QP), psn,\n"
       "icrc (ok, bad, or unchecked with error=REASON when the frame was\n"
       "refused earlier), ackreq, and per opcode the extension headers\n"
       "(RETH va/rkey/dma_len, AETH ACK/NAK/RNR with msn, imm, atomic\n"
       "operands), CM messages on QP1 (cm=REQ/REP/RTU/REJ/DREQ/DREP/MRA with\n"
       "their IDs, QPNs, PSNs, rdma_cm port, REJ reason) and NAAICE MRSP\n"
       "messages in SEND payloads. Other frames are counted, not shown; a\n"
       "summary line ends the output. With --json: one JSON object per line.\n"
       "Reads classic pcap (either byte order, us or ns timestamps) and "
       "pcapng\n"
       "(Wireshark's default: section header, interface description, enhanced\n"
       "and simple packet blocks, either byte order, each interface's\n"
       "if_tsresol; other blocks are skipped), Ethernet link type. Exit 2 "
       "when\n"
       "the file is neither, is cut short or corrupt, has a packet on a\n"
       "non-Ethernet interface, or has frames cut by the snaplen (after\n"
       "printing what it could).\n"
       "docs/roce-decode.md describes every field.\n",
       &RunDecode},
  };
}

}  // namespace spinnic::spinctl
