// Extended attributes (getxattr, setxattr): where the blob store keeps a blob's MD5.
#include <sys/xattr.h>
