/*
 * dlhead.c - a download's Content-Type and Content-Disposition (see
 * rest/dlhead.h).
 */
#include "agent/api/rest/dlhead.h"
#include "agent/api/asuser/path.h"

#include <string.h>
#include <strings.h>

const char *rest_dlhead_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".txt", "text/plain; charset=utf-8"}, {".html", "text/html; charset=utf-8"},
        {".htm", "text/html; charset=utf-8"},  {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"}, {".json", "application/json"},
        {".xml", "text/xml; charset=utf-8"},   {".csv", "text/csv; charset=utf-8"},
        {".md", "text/markdown; charset=utf-8"}, {".svg", "image/svg+xml"},
        {".png", "image/png"},                 {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},               {".gif", "image/gif"},
        {".webp", "image/webp"},               {".pdf", "application/pdf"},
        {".zip", "application/zip"},           {".gz", "application/gzip"},
        {".tar", "application/x-tar"},         {".wasm", "application/wasm"},
    };
    const char *base = asuser_path_base(path), *dot = strrchr(base, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcasecmp(dot, types[i].ext)) return types[i].type;
    return "application/octet-stream";
}

/* MIME's tspecials (RFC 2045), which a token may not hold. */
static int tspecial(unsigned char c) { return c && strchr("()<>@,;:\\\"/[]?=", c); }

static int token_char(unsigned char c) { return c > 0x20 && c < 0x7f && !tspecial(c); }

int rest_dlhead_disposition(struct buf *out, const char *path)
{
    const char *name = asuser_path_base(path);
    size_t n = strlen(name);
    int token = n > 0, encode = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        token &= token_char(c);
        encode |= (c < 0x20 && c != '\t') || c > 0x7e;
    }
    if (buf_puts(out, encode ? "Content-Disposition: inline; filename*=utf-8''" : "Content-Disposition: inline; filename=") < 0 ||
        (!encode && !token && buf_putc(out, '"') < 0))
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        int r;
        if (encode && (c <= 0x20 || c >= 0x7f || c == '*' || c == '\'' || c == '%' || tspecial(c)))
            r = buf_printf(out, "%%%02X", c);
        else if (!encode && !token && (c == '"' || c == '\\'))
            r = buf_putc(out, '\\') < 0 ? -1 : buf_putc(out, (char)c);
        else
            r = buf_putc(out, (char)c);
        if (r < 0) return -1;
    }
    return (!encode && !token && buf_putc(out, '"') < 0) || buf_puts(out, "\r\n") < 0 ? -1 : 0;
}
