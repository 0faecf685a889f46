// expect: 7:5: error: value_set declarations are not supported by softnic
#include <core.p4>
#include <v1model.p4>
struct hs_t { }
struct m_t { }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) ports;
    state start {
        transition accept;
    }
}
