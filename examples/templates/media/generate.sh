#!/bin/sh
# Generates the placeholder media of the example templates with the ffmpeg CLI: no
# downloads, no fonts, nothing copied from elsewhere, so the files carry no third-party
# rights. The generated files are committed (a fresh clone renders the examples without
# running this); rerun it only to change them:
#
#     examples/templates/media/generate.sh
#
# Every input is a lavfi source driven by fixed expressions and seeds, encoders run with
# one thread and bitexact flags, and metadata is dropped, so a rerun with the same ffmpeg
# build writes the same bytes (another ffmpeg version may differ in the last bits).
# Keep the whole directory under 1.5 MB (the examples test checks it). Needs an ffmpeg
# with libx264 and libmp3lame (Debian's `ffmpeg` package has both).
#
#   logo.png      400x400 RGBA, transparent: a play-button badge
#   photo1.jpg    1600x1067: hills at sunset (landscape)
#   photo2.jpg    1067x1600: a tower of lit windows at dusk (portrait)
#   photo3.jpg    1600x1067: a house with a tree (landscape)
#   footage.mp4   1280x720, 5 s, 30 fps, H.264 + AAC: drifting bokeh lights, a 220 Hz hum
#   music.m4a     15 s stereo AAC 80 kb/s: four soft chords, 3.75 s each (loops cleanly)
#   voice.mp3     3 s mono MP3 64 kb/s: a speech-like warble standing in for a voice-over
set -eu
cd "$(dirname "$0")"

ff() { ffmpeg -nostdin -hide_banner -v error -y "$@"; }
# Still images: `still OUTPUT ARGS…`, one frame, no metadata, bitexact muxing.
still() { out=$1; shift; ff "$@" -frames:v 1 -map_metadata -1 -fflags +bitexact -flags:v +bitexact "$out"; }

# logo.png: drawn at 2x and scaled down for smooth edges. An orange disc with a white
# ring, a white play triangle inside; transparent elsewhere.
R='hypot(X-W/2,Y-H/2)/(W/2)'
TRI='gt(X,W*0.39)*lt(abs(Y-H/2),(W*0.72-X)*0.62)'
still logo.png -f lavfi -i "color=c=black@0:s=800x800,format=rgba" -vf "geq=\
r='if(lt($R,0.80)*$TRI,255,if(lt($R,0.80),255-60*Y/H,if(lt($R,0.90),255,0)))':\
g='if(lt($R,0.80)*$TRI,255,if(lt($R,0.80),120-50*Y/H,if(lt($R,0.90),255,0)))':\
b='if(lt($R,0.80)*$TRI,255,if(lt($R,0.80),40+60*Y/H,if(lt($R,0.90),255,0)))':\
a='255*lt($R,0.90)',\
scale=400:400:flags=area,format=rgba"

# photo1.jpg: a warm sky gradient, a sun, three rows of hills (sine ridges), darker
# towards the front.
SUN='lt(hypot(X-W*0.68,Y-H*0.42),H*0.09)'
H1='gt(Y,H*(0.55+0.05*sin(X/W*6.3+1.0)+0.02*sin(X/W*19)))'
H2='gt(Y,H*(0.66+0.06*sin(X/W*4.4+2.5)+0.015*sin(X/W*23)))'
H3='gt(Y,H*(0.80+0.05*sin(X/W*3.1+0.4)+0.01*sin(X/W*31)))'
still photo1.jpg -f lavfi -i "color=c=black:s=1600x1067,format=rgb24" -vf "geq=\
r='if($H3,40,if($H2,82,if($H1,132,if($SUN,255,250-110*Y/H))))':\
g='if($H3,32,if($H2,52,if($H1,78,if($SUN,236,170-120*Y/H))))':\
b='if($H3,58,if($H2,92,if($H1,118,if($SUN,190,120+40*Y/H))))',\
format=yuvj444p" -q:v 5

# photo2.jpg: a dusk gradient behind a tower with a grid of lit windows (some dark).
TOWER='between(X,W*0.22,W*0.78)*gt(Y,H*0.18)'
WIN='between(mod(X-W*0.22,W*0.07),W*0.02,W*0.055)*between(mod(Y-H*0.18,H*0.045),H*0.012,H*0.035)'
LIT='gt(sin(floor(X/(W*0.07))*12.9898+floor(Y/(H*0.045))*78.233),-0.3)'
still photo2.jpg -f lavfi -i "color=c=black:s=1067x1600,format=rgb24" -vf "geq=\
r='if($TOWER,if($WIN,if($LIT,255,40),28),30+60*Y/H)':\
g='if($TOWER,if($WIN,if($LIT,205,44),30),40+40*Y/H)':\
b='if($TOWER,if($WIN,if($LIT,120,70),48),110-10*Y/H)',\
format=yuvj444p" -q:v 5

# photo3.jpg: a house on a lawn under a blue sky, a tree beside it.
LAWN='gt(Y,H*(0.78+0.01*sin(X/W*9)))'
BODY='between(X,W*0.30,W*0.70)*between(Y,H*0.45,H*0.80)'
ROOF='between(Y,H*0.25,H*0.46)*lt(abs(X-W*0.5),(Y-H*0.25)/(H*0.21)*W*0.23)'
CHIMNEY='between(X,W*0.60,W*0.64)*between(Y,H*0.27,H*0.40)'
DOOR='between(X,W*0.46,W*0.54)*between(Y,H*0.60,H*0.80)'
WINDOWS='(between(X,W*0.35,W*0.42)+between(X,W*0.58,W*0.65))*between(Y,H*0.53,H*0.65)'
CROWN='lt(hypot(X-W*0.14,Y-H*0.50),H*0.14)'
TRUNK='between(X,W*0.13,W*0.15)*between(Y,H*0.55,H*0.80)'
house() { # sky lawn body roof chimney door windows crown trunk: one channel each
  echo "if($DOOR,$6,if($WINDOWS,$7,if($BODY,$3,if($ROOF,$4,if($CHIMNEY,$5,if($CROWN,$8,if($TRUNK,$9,if($LAWN,$2,$1))))))))"
}
still photo3.jpg -f lavfi -i "color=c=black:s=1600x1067,format=rgb24" -vf "geq=\
r='$(house '110+70*Y/H' '80-30*Y/H' 236 156 120 96 172 52 98)':\
g='$(house '165+55*Y/H' '150-40*Y/H' 226 64 60 64 212 112 70)':\
b='$(house 238 '70-30*Y/H' 206 52 56 44 232 60 48)',\
format=yuvj444p" -q:v 5

# footage.mp4: soft out-of-focus lights drifting over a dark violet gradient (one disc
# sprite, tinted and moved six ways), and a quiet 220 Hz hum with its octave as sound.
G="[0:v]format=yuv420p[bg];color=c=white:s=256x256:r=30:d=1,format=rgba,\
geq=r=255:g=255:b=255:a='230*clip((127-hypot(X-127.5,Y-127.5))/3,0,1)',\
trim=end_frame=1,loop=loop=149:size=1,setpts=N/30/TB,split=6[s1][s2][s3][s4][s5][s6]"
prev=bg; i=0
light() { # size red green blue alpha centre-x centre-y (fractions of the frame, over t)
  i=$((i+1))
  G="$G;[s$i]scale=$1:$1,colorchannelmixer=rr=$2:gg=$3:bb=$4:aa=$5[d$i]"
  G="$G;[$prev][d$i]overlay=x='W*($6)-w/2':y='H*($7)-h/2':eval=frame[o$i]"
  prev=o$i
}
light 230 0.95 0.60 0.40 0.55 '0.20+0.08*sin(t*0.9)' '0.35+0.06*cos(t*0.7)'
light 316 0.60 0.35 0.85 0.50 '0.55+0.10*sin(t*0.6+1)' '0.60+0.05*sin(t*1.1)'
light 172 0.35 0.70 0.90 0.55 '0.82+0.05*cos(t*0.8)' '0.30+0.08*sin(t*0.5+2)'
light 116 0.95 0.85 0.70 0.45 '0.38+0.06*cos(t*1.2+3)' '0.22+0.05*cos(t*0.9)'
light 144 0.70 0.60 1.00 0.50 '0.70+0.07*sin(t*1.0+4)' '0.80+0.04*cos(t*0.6)'
light 188 0.75 0.40 0.95 0.50 '0.08+0.05*sin(t*0.7+5)' '0.78+0.05*sin(t*0.8)'
G="$G;[$prev]gblur=sigma=1.5,format=yuv420p[v]"
ff -f lavfi -i "gradients=s=1280x720:r=30:c0=0x0c1030:c1=0x2b1c4d:nb_colors=2:seed=3:speed=0.01:duration=5" \
   -f lavfi -i "aevalsrc=exprs='0.2*sin(2*PI*220*t)+0.1*sin(2*PI*440*t)':s=44100:d=5" \
   -filter_complex "$G" -map "[v]" -map 1:a \
   -c:v libx264 -preset veryfast -crf 32 -threads 1 -g 60 -c:a aac -b:a 64k -ac 1 \
   -map_metadata -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact -movflags +faststart \
   -shortest footage.mp4

# music.m4a: Cmaj7, Am7, Fmaj7, G6 — 3.75 s each, every chord swelling in and out so the
# changes (and the loop point at 15 s) do not click; the right channel slightly detuned.
CHORD='st(0,floor(mod(t,15)/3.75));st(1,mod(t,3.75));st(2,min(1,min(ld(1)/0.6,(3.75-ld(1))/0.9)))'
F1='if(eq(ld(0),0),130.81,if(eq(ld(0),1),110.00,if(eq(ld(0),2),87.31,98.00)))'
F2='if(eq(ld(0),0),329.63,if(eq(ld(0),1),261.63,if(eq(ld(0),2),220.00,246.94)))'
F3='if(eq(ld(0),0),392.00,if(eq(ld(0),1),329.63,if(eq(ld(0),2),261.63,293.66)))'
F4='if(eq(ld(0),0),493.88,if(eq(ld(0),1),392.00,if(eq(ld(0),2),329.63,329.63)))'
voices() { echo "$CHORD;ld(2)*(0.16*sin(2*PI*$F1*$1*t)+0.09*sin(2*PI*$F2*$1*t)+0.08*sin(2*PI*$F3*$1*t)+0.06*sin(2*PI*$F4*$1*t))*(0.85+0.15*sin(2*PI*0.25*t))"; }
ff -f lavfi -i "aevalsrc=exprs='$(voices 1)|$(voices 1.002)':s=44100:d=15" \
   -c:a aac -b:a 80k -map_metadata -1 -fflags +bitexact -flags:a +bitexact music.m4a

# voice.mp3: a warbling 150-230 Hz tone with harmonics, chopped into syllables at about
# 4 per second, with a short pause in the middle.
ff -f lavfi -i "aevalsrc=exprs='st(0,190+40*sin(2*PI*1.3*t));\
st(1,pow(abs(sin(PI*4.2*t)),1.5)*not(between(t,1.45,1.75))*min(1,(3-t)/0.2));\
ld(1)*(0.45*sin(2*PI*ld(0)*t)+0.2*sin(4*PI*ld(0)*t)+0.1*sin(6*PI*ld(0)*t))':s=22050:d=3" \
   -c:a libmp3lame -b:a 64k -map_metadata -1 -fflags +bitexact -flags:a +bitexact -write_xing 0 voice.mp3

# subtitles.srt: the subtitles of explainer-captions' first clip, and badge.json: its
# Lottie badge (a square turning and pulsing, 2 s at 25 fps) — both written, not generated.
ls -l badge.json logo.png photo1.jpg photo2.jpg photo3.jpg footage.mp4 music.m4a voice.mp3 subtitles.srt
