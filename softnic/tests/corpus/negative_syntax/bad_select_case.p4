// expect: 11:15: error: syntax error, unexpected IDENTIFIER "parse_more"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct hs_t { h_t h; }
struct m_t { }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            1 parse_more;
            default: accept;
        }
    }
}
