#!/usr/bin/env python3
"""One whole-library upload against a running Concord, measured from outside.

upload-client.py PORT ADMIN_TOKEN N PART_OBJECTS SERVER_PID MODE
  MODE parts: POST /v1/library/uploads, N/PART_OBJECTS parts, commit
  MODE put:   one PUT /v1/library of N assets (bounded by the body limit)
Prints one JSON line: the answer, wall and server CPU (utime+stime of SERVER_PID) of the parts and
of the commit (or the PUT), and the server's RSS before, at its peak (sampled every 50 ms) and after.
Assets look like PhotoKit's: a UUID-shaped local identifier, a SHA-256 fingerprint, a date.
"""
import http.client, json, sys, time, os, threading, base64, hashlib
port=int(sys.argv[1]); admin=sys.argv[2]; n=int(sys.argv[3]); part=int(sys.argv[4]); pid=int(sys.argv[5]); mode=sys.argv[6] if len(sys.argv)>6 else "parts"
c=http.client.HTTPConnection("127.0.0.1",port,timeout=600)
def call(m,p,tok,body=None):
    h={"Authorization":"Bearer "+tok,"Content-Type":"application/json"}
    c.request(m,p,body=body,headers=h); r=c.getresponse(); d=r.read()
    return r.status, (json.loads(d) if d else None)
s,a=call("POST","/v1/accounts",admin,json.dumps({"name":"scale"})); at=a["accountToken"]
s,d=call("POST","/v1/devices",at,json.dumps({"name":"phone"})); dt=d["deviceToken"]
peak=[0]; stop=[False]
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1])
def sampler():
    while not stop[0]:
        peak[0]=max(peak[0],rss()); time.sleep(0.05)
base=rss(); threading.Thread(target=sampler,daemon=True).start()
def fp(i): return base64.urlsafe_b64encode(hashlib.sha256(str(i).encode()).digest()).decode().rstrip("=")
def asset(i): return {"localIdentifier":"%08X-0000-4000-8000-000000000000/L0/001"%i,"fingerprint":fp(i),"creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}
def cpu():
    f=open(f"/proc/{pid}/stat").read().split(")")[1].split(); return (int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK")
t0=time.time(); c0=cpu()
if mode=="parts":
    s,u=call("POST","/v1/library/uploads",dt,"{}"); uid=u["uploadID"]
    for k in range(0,n,part):
        body=json.dumps({"assets":[asset(i) for i in range(k,min(n,k+part))]})
        s,r=call("PUT",f"/v1/library/uploads/{uid}/parts/{k//part+1}",dt,body)
        assert s==200,(s,r)
    t1=time.time(); c1=cpu(); peak_parts=peak[0]
    s,r=call("POST",f"/v1/library/uploads/{uid}/commit",dt,"{}")
else:
    body=json.dumps({"assets":[asset(i) for i in range(n)]}); t1=time.time(); c1=cpu(); peak_parts=peak[0]
    s,r=call("PUT","/v1/library",dt,body)
t2=time.time(); c2=cpu(); stop[0]=True; time.sleep(0.1)
print(json.dumps({"mode":mode,"n":n,"status":s,"answer":r,"parts_wall_s":round(t1-t0,2),"parts_cpu_s":round(c1-c0,2),"commit_wall_s":round(t2-t1,2),"commit_cpu_s":round(c2-c1,2),"rss_before_mib":round(base/1024,1),"peak_rss_sending_mib":round(peak_parts/1024,1),"peak_rss_mib":round(peak[0]/1024,1),"rss_after_mib":round(rss()/1024,1)}))
