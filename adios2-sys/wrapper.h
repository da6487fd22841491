#include <adios2_c.h>
