// Numbers as text, for messages that must quote a value exactly.
#pragma once

#include <string>

namespace capstan::syntax {

// The shortest decimal (printf's %g style, 6 to 17 significant digits)
// that reads back as x: a message must not round -1.0000001 to -1, nor
// print 0.3 as 0.29999999999999999.
std::string exactNumber(double x);

}  // namespace capstan::syntax
