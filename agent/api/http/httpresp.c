/*
 * httpresp.c - response heads (see http/httpresp.h).
 */
#include "agent/api/http/httpresp.h"

#include <string.h>

static const struct {
    int status;
    const char *text;
} reasons[] = {
    {100, "Continue"},         {200, "OK"},
    {204, "No Content"},       {206, "Partial Content"},
    {304, "Not Modified"},     {416, "Range Not Satisfiable"},
    {400, "Bad Request"},
    {401, "Unauthorized"},     {403, "Forbidden"},
    {404, "Not Found"},        {405, "Method Not Allowed"},
    {408, "Request Timeout"},  {409, "Conflict"},
    {412, "Precondition Failed"}, {413, "Content Too Large"},
    {415, "Unsupported Media Type"}, {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"}, {499, "Client Closed Request"},
    {500, "Internal Server Error"}, {501, "Not Implemented"},
    {502, "Bad Gateway"},      {503, "Service Unavailable"},
    {504, "Gateway Timeout"},  {505, "HTTP Version Not Supported"},
    {507, "Insufficient Storage"},
};

const char *httpresp_reason(int status)
{
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (reasons[i].status == status) return reasons[i].text;
    return "Unknown";
}

int httpresp_head(struct outq *q, const struct httpresp *h)
{
    if (outq_printf(q, "HTTP/1.1 %d %s\r\n", h->status, httpresp_reason(h->status)) < 0)
        return -1;
    if (h->ctype && outq_printf(q, "Content-Type: %s\r\n", h->ctype) < 0) return -1;
    /* A 204 or a 304 has no body and must not say it has one of length 0. */
    if (h->framing == HTTPRESP_LENGTH && h->status != 204 && h->status != 304 &&
        outq_printf(q, "Content-Length: %llu\r\n", (unsigned long long)h->length) < 0)
        return -1;
    if (h->framing == HTTPRESP_CHUNKED && outq_printf(q, "Transfer-Encoding: chunked\r\n") < 0)
        return -1;
    if (h->close && outq_printf(q, "Connection: close\r\n") < 0) return -1;
    if (!h->close && h->keep_alive_10 && outq_printf(q, "Connection: keep-alive\r\n") < 0)
        return -1;
    if (h->extra && outq_put(q, h->extra, strlen(h->extra)) < 0) return -1;
    return outq_put(q, "\r\n", 2);
}
