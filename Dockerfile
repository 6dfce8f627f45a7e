# sandbox-agent container images. Three stages:
#
#   build   debian:bookworm-slim; builds build/sandbox-agent with the project's
#           own Makefile (the one build recipe: `make` installs musl-tools and
#           fetches the pinned Debian source packages itself, so this stage
#           needs network access at build time).
#   agent   FROM scratch, holding only /sandbox-agent. Base images copy from it:
#             COPY --from=sandbox-agent:agent /sandbox-agent /usr/local/bin/sandbox-agent
#           Build it with `docker build --target agent -t sandbox-agent:agent .`
#   (last)  an example sandbox image: debian:bookworm-slim + python3, the agent
#           as PID 1 running the job in SANDBOX_JOB_INNER_ENTRY; port 49983 is
#           the envd API of `sandbox-agent serve` (README "use it from the E2B SDK").
#
#   docker build -t sandbox-agent-example .
#   docker run --rm -e SANDBOX_JOB_INNER_ENTRY='["python3","-c","print(1)"]' sandbox-agent-example
#   docker run --rm -p 127.0.0.1:49983:49983 -e SANDBOX_AGENT_TOKEN="$TOKEN" \
#       --entrypoint /usr/local/bin/sandbox-agent sandbox-agent-example serve

FROM debian:bookworm-slim AS build
# make is the only thing the Makefile cannot install for itself; everything
# else (musl-tools, gcc through it) comes from deps/packages.sh.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# A clean tree (.dockerignore keeps the host's build/ out): deps are fetched,
# checked against deps/SHA256SUMS and built here, never copied from the host.
# Plain `make`, as documented: the package install and the source fetch both
# run apt-get and must not run side by side.
RUN make \
 && ./build/sandbox-agent --version \
 && install -m 0755 build/sandbox-agent /sandbox-agent

FROM scratch AS agent
COPY --from=build /sandbox-agent /sandbox-agent

FROM debian:bookworm-slim
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=agent /sandbox-agent /usr/local/bin/sandbox-agent
# The agent creates the result file's directory itself; making it here just
# lets a non-root USER write its result without a fallback path.
RUN mkdir -p /sandbox && chmod 1777 /sandbox
# `sandbox-agent serve` listens here (0.0.0.0:49983 when SANDBOX_AGENT_TOKEN is set).
EXPOSE 49983
ENTRYPOINT ["/usr/local/bin/sandbox-agent", "run"]
