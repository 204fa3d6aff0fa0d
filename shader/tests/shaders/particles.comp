#version 450
// A GLSL buffer block of a struct array (std430), indexed with an int.
layout(local_size_x = 32) in;

struct Particle {
    vec2 pos;
    vec2 vel;
    float mass[2];
};

layout(std430, set = 0, binding = 0) buffer Particles { Particle particles[]; };
layout(std430, set = 0, binding = 1) buffer Out { float energy[]; };

void main() {
    int i = int(gl_GlobalInvocationID.x);
    float m = particles[i].mass[0] + particles[i].mass[1];
    vec2 v = particles[i].vel;
    energy[i] = 0.5 * m * dot(v, v);
    particles[i].pos += v;
    particles[i].mass[i & 1] = m;
}
